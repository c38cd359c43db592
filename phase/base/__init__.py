"""The base layer every package may use, and that imports nothing of phase.

    errors    PhaseError and UsageProblem (what the CLI catches), env_value
    escaping  text made safe for the context it lands in (Markdown, HTML, URLs, Vega)
    lazy      a package's public names looked up on first use (PEP 562)
"""

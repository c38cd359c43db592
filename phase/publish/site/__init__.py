"""The build: every directory of a build, staging dirs swapped in on success, validate and
render into one docs dir, mkdocs build --strict, freeze new versions, serve."""

"""Results files loaded once for a build (bytes, sha256, parsed model, findings, summary),
and the build cache that keeps what was derived from each unchanged file."""

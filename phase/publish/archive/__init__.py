"""The archive of published note versions (published/<slug>/vN/): frozen pages and the
sha256 of every input; digests of phase's code and templates."""

"""The page kinds a site holds: a note's pages, a data page per results file, the
cross-host pages, the home page's list."""

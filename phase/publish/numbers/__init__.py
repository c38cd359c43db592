"""What a page shows as numbers: results-table rows, findings lists, per-run ranges, per-step
costs, headlines, provenance, version changes, downloads (CSV/JSON), bench rows."""

"""Apple silicon: powermetrics' rails."""

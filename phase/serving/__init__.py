"""Serving many requests at once: load generators (closed loop at a fixed concurrency, open
loop with seeded Poisson arrivals) that drive a `phase.policy.batching.BatchDecoder`, and the
serving metrics computed from what they record. Pure: no llama_cpp, no phase.decode.

`load` runs a load and returns a `records.RunRecord`; `metrics.serving_metrics` turns one into
per-request latencies, their percentiles, goodput and acceptance, and `windows` the throughput
and energy of the whole run and of its steady state."""

"""Serving many requests at once: load generators (closed loop at a fixed concurrency, open
loop with seeded Poisson arrivals) that drive a `phase.policy.batching.BatchDecoder`, and the
serving metrics computed from what they record. Pure: no llama_cpp, no phase.decode."""

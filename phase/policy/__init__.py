"""Decoding policy: what to propose, what to keep, and how to count it, apart from the model.

Nothing here imports llama_cpp or phase.decode (an import-linter contract): policy is driven
by the tokens and logits it is handed, so it is tested with scripted logits and no model, and
phase.decode (model access: contexts, batches, KV, logits) calls into it.
"""

"""phase: energy and time cost of LLM inference optimisations."""

__version__ = "0.1.0"

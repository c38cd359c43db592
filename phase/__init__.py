"""phase: energy and time cost of LLM inference optimisations."""

from pathlib import Path

__version__ = "0.1.0"

# The checkout phase runs from: experiments/, templates/, results/ and docs/ live here.
REPO_ROOT = Path(__file__).resolve().parent.parent

"""Whether a results file is a study or a smoke test: a smoke test is never the record.

A quick campaign (`phase measure --quick`) runs a small test model for a few tokens to check
that the machinery works; its figures say nothing about the study's question. The file says
so in `config.purpose` (from schema 6 on); older files are known by their models, since the
embedded test models are named by sha256 in phase.models.sources.
"""

from __future__ import annotations

from phase.models.sources import EMBEDDED, is_test_model
from phase.results import ResultsFile, SummaryFile

_NAMES = {m.sha256: m.name for m in EMBEDDED.values()}


def smoke_reason(results: ResultsFile | SummaryFile) -> str | None:
    """Why `results` is a smoke test and not a study, or None when it is a study."""
    if not isinstance(results, ResultsFile):
        return None
    purpose = results.config.purpose
    if purpose == "smoke":
        return "its plan was a smoke test (config.purpose is \"smoke\": phase measure --quick)"
    if purpose == "study":
        return None
    # Files from before purpose was recorded: a campaign on a test model was a smoke test.
    tests = sorted({_NAMES[m.sha256] for m in results.models if is_test_model(m.sha256)})
    if tests:
        return f"it ran phase's test model ({', '.join(tests)}) and records no purpose"
    return None

"""equivalence (warning): a run whose output differs from plain decoding's, with the index of
the first token where they part."""

from __future__ import annotations

from phase.results import ResultsFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for run in results.runs:
        if run.matches_plain is False:
            index = run.first_divergence
            assert index is not None  # the schema requires it when matches_plain is false
            out.append(ctx.finding(
                "equivalence",
                "warning",
                f"output differs from plain decoding from token {index} of {run.tokens}",
                run=run,
                numbers={"first_divergence": index, "tokens": run.tokens},
            ))
    return out

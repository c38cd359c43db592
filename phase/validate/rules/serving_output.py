"""The equivalence rule's check of a serving run: every request's output recomputed against
its own prompt's plain reference (the run's `prompt` is the pool, not a prompt).

A request matches plain decoding when its tokens are the reference's first tokens (a served
request ends at its first end-of-generation token, where the one-request reference runs on to
its fixed count; which token ends generation is the model's, not in the file, so a request
that stopped early is held to the reference's prefix only). Blocking: a request whose prompt
has no reference, a recorded `matches_plain` (the request's or the run's) or
`first_divergence` that disagrees with the recomputation, and the Run's own divergence gaps
(a serving run's evidence is per request, not the whole load's). Each differing request's evidence
(its first divergence and top-2 logit gaps) is phase.validate.rules.serving_gaps'.
"""

from __future__ import annotations

from collections.abc import Mapping

from phase.results import Level, PlainReference, Run
from phase.validate.registry import Helper
from phase.validate.report import Context, Finding
from phase.validate.rules.serving_gaps import request_evidence, request_matches
from phase.validate.settings import RuleSettings

RefKey = tuple[str, tuple[tuple[str, Level], ...]]


def serving_outputs(run: Run, references: Mapping[RefKey, PlainReference],
                    wanted: Mapping[str, Level], where: str, ctx: Context,
                    settings: RuleSettings, recorded: bool) -> list[Finding]:
    """The findings on a serving run's outputs; `recorded`: whether the file records the
    divergence evidence (serving_gaps.records_evidence)."""
    assert run.serving is not None
    problems: list[tuple[str, str]] = []
    evidence: list[Finding] = []
    at, divergence, all_match = 0, None, True
    for j, r in enumerate(run.serving.requests):
        ref = references.get((r.prompt, tuple(wanted.items())))
        path = f"{where}.serving.requests[{j}]"
        if ref is None:
            problems.append((f"no plain reference for prompt {r.prompt!r}, so request {r.id} "
                             "cannot be checked", f"{path}.prompt"))
            all_match = False
            continue
        matches, i = request_matches(r.token_ids, ref.token_ids)
        if r.matches_plain != matches:
            problems.append((f"request {r.id}: matches_plain is {r.matches_plain} but its "
                             f"tokens make it {matches}", f"{path}.matches_plain"))
        evidence += request_evidence(run, r, ref, i, path, settings, ctx, recorded)
        if not matches and divergence is None:
            divergence = at + (i or 0)
        all_match = all_match and matches
        at += len(r.token_ids)
    if run.matches_plain != all_match:
        problems.append((f"matches_plain is {run.matches_plain} but its requests make it "
                         f"{all_match}", f"{where}.matches_plain"))
    for field in ("divergence_gap_verify", "divergence_gap_reference"):
        if getattr(run, field) is not None:
            problems.append((f"{field} is recorded on a serving run: its evidence is each "
                             "request's own", f"{where}.{field}"))
    if run.first_divergence != divergence:
        problems.append((f"first_divergence is {run.first_divergence} but its requests make it "
                         f"{divergence}", f"{where}.first_divergence"))
    return [ctx.finding("equivalence", "blocking", text, run=run, json_path=path)
            for text, path in problems] + evidence


RULE = Helper("the equivalence rule's check of serving runs")

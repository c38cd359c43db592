"""The equivalence rule's check of a serving run: every request's output recomputed against
its own prompt's plain reference (the run's `prompt` is the pool, not a prompt).

A request matches plain decoding when its tokens are the reference's first tokens (a served
request ends at its first end-of-generation token, where the one-request reference runs on to
its fixed count; which token ends generation is the model's, not in the file, so a request
that stopped early is held to the reference's prefix only). Blocking: a request whose prompt
has no reference, a recorded `matches_plain` (the request's or the run's) or
`first_divergence` that disagrees with the recomputation.
"""

from __future__ import annotations

from collections.abc import Mapping

from phase.results import Level, PlainReference, Run
from phase.validate.registry import Helper
from phase.validate.report import Context, Finding

RefKey = tuple[str, tuple[tuple[str, Level], ...]]


def request_matches(tokens: list[int], reference: list[int]) -> tuple[bool, int | None]:
    """(matches, first differing index within the request)."""
    for i, (a, b) in enumerate(zip(tokens, reference, strict=False)):
        if a != b:
            return False, i
    if len(tokens) > len(reference) or not tokens:
        return False, min(len(tokens), len(reference))
    return True, None


def serving_outputs(run: Run, references: Mapping[RefKey, PlainReference],
                    wanted: Mapping[str, Level], where: str, ctx: Context) -> list[Finding]:
    assert run.serving is not None
    problems: list[tuple[str, str]] = []
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
        if not matches and divergence is None:
            divergence = at + (i or 0)
        all_match = all_match and matches
        at += len(r.token_ids)
    if run.matches_plain != all_match:
        problems.append((f"matches_plain is {run.matches_plain} but its requests make it "
                         f"{all_match}", f"{where}.matches_plain"))
    if run.first_divergence != divergence:
        problems.append((f"first_divergence is {run.first_divergence} but its requests make it "
                         f"{divergence}", f"{where}.first_divergence"))
    return [ctx.finding("equivalence", "blocking", text, run=run, json_path=path)
            for text, path in problems]


RULE = Helper("the equivalence rule's check of serving runs")

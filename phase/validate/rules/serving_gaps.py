"""The evidence at a served request's first divergence from plain decoding, checked as the
equivalence rule checks a one-request run's (phase.validate.rules.equivalence).

A request that differs records `first_divergence` (recomputed from its tokens and its prompt's
reference, never trusted) and two top-2 logit gaps there: its own batched row's
(`divergence_gap_verify`) and the reference's (`divergence_gap_reference`, which must be the
reference's own `top2_gaps` entry). Blocking, as for one-request runs: evidence on a request
that matches (nothing diverged: fabricated or copied), a recorded index or reference gap that
disagrees, a divergence whose gaps are not both below `near_tie_gap` (a pass chose against a
clear margin: a decoder bug), and, in a file that records the evidence, a divergence without
it (leaving out a clear-margin gap would hide a bug). A near tie (both gaps below) is the
numerics of two batch shapes: the report says how many, as a note, not a finding per request
(a campaign of hundreds of requests has tens). Files written before serving runs recorded the
evidence (no request records a `first_divergence`) get a note saying their differences are
unclassified, never a finding: they stay publishable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

from phase.results import Level, PlainReference, ResultsFile, Run
from phase.results.levels import reference_levels, run_temperature
from phase.results.serving import ServingRequest
from phase.validate.registry import Helper
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

RefKey = tuple[str, tuple[tuple[str, Level], ...]]
Kind = Literal["equal", "near tie", "clear margin", "unrecorded"]
_EVIDENCE = ("first_divergence", "divergence_gap_verify", "divergence_gap_reference")


def records_evidence(results: ResultsFile) -> bool:
    """Whether the file's serving requests record divergence evidence (phase writes
    `first_divergence` on every request that differs): then a divergence must carry it."""
    return any(q.first_divergence is not None for run in results.runs if run.serving
               for q in run.serving.requests)


def request_kind(q: ServingRequest, near_tie_gap: float) -> Kind:
    """How a request compares with plain decoding, by what it records (for pages, which read
    files the rules have passed)."""
    if q.matches_plain is not False:
        return "equal"
    gaps = (q.divergence_gap_verify, q.divergence_gap_reference)
    if gaps[0] is None or gaps[1] is None:
        return "unrecorded"
    return "near tie" if max(gaps[0], gaps[1]) < near_tie_gap else "clear margin"


def _reference_gap(ref: PlainReference, index: int) -> float | None:
    gaps = ref.top2_gaps
    return gaps[index] if gaps is not None and index < len(gaps) else None


def _near_tie(gap_verify: float | None, gap_reference: float | None,
              settings: RuleSettings) -> bool:
    return (gap_verify is not None and gap_reference is not None
            and max(gap_verify, gap_reference) < settings.near_tie_gap)


def request_evidence(run: Run, q: ServingRequest, ref: PlainReference, index: int | None,
                     path: str, settings: RuleSettings, ctx: Context,
                     recorded: bool) -> list[Finding]:
    """The findings on request `q` whose recomputed first divergence is `index` (None: it
    matches); `recorded`: whether the file records the evidence (records_evidence)."""
    def blocking(text: str, field: str, category: str | None = None) -> Finding:
        return ctx.finding("equivalence", "blocking", f"request {q.id}: {text}", run=run,
                           json_path=f"{path}.{field}", category=category)

    if index is None:
        return [blocking(f"{f} is recorded ({getattr(q, f):.6g}), but its tokens equal the "
                         "plain reference: there is no divergence for it to be evidence of", f)
                for f in _EVIDENCE if getattr(q, f) is not None]
    if not recorded:
        return []  # an older file: report_notes says so
    if q.first_divergence != index:
        return [blocking(f"first_divergence is {q.first_divergence}, but its tokens part from "
                         f"the plain reference at {index}", "first_divergence")]
    gap_ref = _reference_gap(ref, index)
    if q.divergence_gap_verify is None or gap_ref is None:
        whose = "its own" if q.divergence_gap_verify is None else "the plain reference's"
        return [blocking(f"differs from plain decoding from token {index}, but {whose} top-2 "
                         "logit gap there is not recorded, though this file records the "
                         "evidence: it cannot be told a near tie from a mismatch",
                         "divergence_gap_verify")]
    if q.divergence_gap_reference != gap_ref:
        return [blocking(f"divergence_gap_reference {q.divergence_gap_reference} is not the "
                         f"reference's own gap {gap_ref:.4g} at token {index}",
                         "divergence_gap_reference")]
    if _near_tie(q.divergence_gap_verify, gap_ref, settings):
        return []  # a near tie: counted in report_notes
    return [blocking(f"differs from plain decoding from token {index}; mismatch: gaps between "
                     f"the two best logits: its batched row {q.divergence_gap_verify:.4g}, "
                     f"plain's {gap_ref:.4g}, not both below {settings.near_tie_gap:.4g}, so a "
                     "pass chose against a clear margin (a decoder bug)",
                     "divergence_gap_verify", category="mismatch")]


def request_matches(tokens: list[int], reference: list[int]) -> tuple[bool, int | None]:
    """(matches, first differing index within the request). A served request may stop early
    (at an end token), so it is held to the reference's prefix."""
    for i, (a, b) in enumerate(zip(tokens, reference, strict=False)):
        if a != b:
            return False, i
    if len(tokens) > len(reference) or not tokens:
        return False, min(len(tokens), len(reference))
    return True, None


def _differing(results: ResultsFile) -> Iterator[tuple[ServingRequest, PlainReference, int]]:
    """Every greedy serving request that differs from its reference (recomputed)."""
    refs: Mapping[RefKey, PlainReference] = {
        (r.prompt, tuple(r.factors.items())): r for r in results.references}
    for run in results.runs:
        if run.serving is None or run_temperature(results.config, run.factors) > 0:
            continue
        wanted = tuple(reference_levels(results.config, run.factors).items())
        for q in run.serving.requests:
            ref = refs.get((q.prompt, wanted))
            index = None if ref is None else request_matches(q.token_ids, ref.token_ids)[1]
            if ref is not None and index is not None:
                yield q, ref, index


def report_notes(results: ResultsFile, settings: RuleSettings) -> list[str]:
    """The report's notes: how many served requests differ at a near tie, or, in an older
    file, that their differences are unclassified ([] where none differs)."""
    differing = list(_differing(results))
    if not differing:
        return []
    if not records_evidence(results):
        return [f"serving divergences unclassified: {len(differing)} served request(s) differ "
                "from plain decoding, in a file written before serving runs recorded the top-2 "
                "logit gaps at a request's first divergence, so no rule can tell near ties "
                "from decoder faults there"]
    ties = sum(1 for q, ref, i in differing
               if _near_tie(q.divergence_gap_verify, _reference_gap(ref, i), settings))
    if not ties:
        return []
    return [f"serving near ties: {ties} of {len(differing)} differing served request(s) part "
            "from plain decoding where both passes' top-2 logit gaps are below "
            f"{settings.near_tie_gap:.4g} (numerics of two batch shapes, not a decoder bug)"]


RULE = Helper("the equivalence rule's check of a served request's divergence evidence")

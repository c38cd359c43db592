"""equivalence: every run's output recomputed against its prompt's plain reference.

Nothing recorded is trusted. Blocking: a reference or run whose `output_sha256` is not the
digest of its `token_ids`; a reference of the wrong length, or with a `top2_gaps` list that
does not have one gap per token; a prompt with two references, or a run whose prompt has
none; a recorded `matches_plain` / `first_divergence` that disagrees with the recomputation;
divergence evidence that disagrees with the reference's own record, and any divergence
evidence (`first_divergence`, `divergence_gap_*`) on a run whose tokens match the reference:
nothing diverged there, so what it records is not evidence of anything.

Each divergence (recomputed) is classed by the gaps between the two best logits of both
passes at its first differing token: `near-tie` when both are below `near_tie_gap` (the two
passes' numerics differ by less than the margin of the choice: a warning), `mismatch` when
either is at or above it (a pass chose against a clear margin: a decoder bug, blocking), and
`unclassified` when a gap was not recorded (files older than the evidence: a warning). A
file whose references record their gap lists is not older than the evidence: there a
reference without its list, or a divergence without this run's gap, is blocking, since
leaving a clear-margin gap out would turn a mismatch into a warning (or, with the run's own
`divergence_gap_reference` then trusted, into a near-tie).

Sampled runs (a `temperature` factor's level above 0) are not expected to equal plain's text:
sampling draws, and the reference is greedy. What makes them trustworthy is that each keeps
the target's distribution exactly, which no single file can show: tests/test_sampling_exact.py
proves it statistically for every strategy (and shows a wrong rule failing). What a file can
show, and this rule checks for them instead (blocking): the campaign records its sampling
settings (config.sampling), the run records the seed the file's seed rule gives for its slot
(its own id, or for a re-run the id it re-runs), so the run can be regenerated from the file,
and it claims no token-by-token comparison (matches_plain and the divergence evidence
absent). A greedy run must record no seed. Greedy runs are otherwise checked as above.

A serving run (Run.serving) is checked request by request (phase.validate.rules.
serving_output): each against its own prompt's reference, which it must equal up to its
length (a served request ends at an end-of-generation token, the reference runs on past it),
and each differing request's evidence as a one-request run's (phase.validate.rules.
serving_gaps; its near ties and an older file's unrecorded evidence are the report's notes).
"""

from __future__ import annotations

from phase.policy.result import compare_to_plain
from phase.results import Level, PlainReference, ResultsFile, Run, token_sha256
from phase.results.levels import reference_levels, run_seed, run_temperature, run_tokens
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.rules.serving_gaps import records_evidence as serving_evidence
from phase.validate.rules.serving_output import serving_outputs
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    references: dict[tuple[str, tuple[tuple[str, Level], ...]], PlainReference] = {}
    for i, ref in enumerate(results.references):
        out += _reference(ref, i, run_tokens(results.config, ref.factors), ctx)
        key = (ref.prompt, tuple(ref.factors.items()))
        if key in references:
            out.append(ctx.finding(
                "equivalence", "blocking", "a second plain reference for this prompt"
                + (" at these levels" if ref.factors else ""),
                prompt=ref.prompt, json_path=f"$.references[{i}]",
            ))
        references.setdefault(key, ref)
    evidence, served = records_evidence(results), serving_evidence(results)
    for i, ref in enumerate(results.references):
        if evidence and ref.top2_gaps is None:
            out.append(ctx.finding(
                "equivalence", "blocking", "this reference records no top2_gaps, though the "
                "file's other references do: the divergences of its runs could not be judged",
                prompt=ref.prompt, json_path=f"$.references[{i}].top2_gaps",
            ))
    for i, run in enumerate(results.runs):
        where = f"$.runs[{i}]"
        if run.output_sha256 != token_sha256(run.token_ids):
            out.append(ctx.finding(
                "equivalence", "blocking",
                "output_sha256 is not the sha256 of this run's token_ids",
                run=run, json_path=f"{where}.output_sha256",
            ))
        if run_temperature(results.config, run.factors) > 0:
            out += _sampled(results, run, where, ctx)
            continue
        if run.seed is not None:
            out.append(ctx.finding(
                "equivalence", "blocking",
                f"a greedy run records a sampling seed ({run.seed}); only a run at a "
                "temperature above 0 samples",
                run=run, json_path=f"{where}.seed",
            ))
        wanted = reference_levels(results.config, run.factors)
        if run.serving is not None:
            out += serving_outputs(run, references, wanted, where, ctx, settings, served)
            continue
        its_reference = references.get((run.prompt, tuple(wanted.items())))
        if its_reference is None:
            out.append(ctx.finding(
                "equivalence", "blocking",
                "no plain reference for this prompt, so the output cannot be checked",
                run=run, json_path=f"{where}.prompt",
            ))
            continue
        out += _run(run, its_reference, where, settings, ctx, evidence)
    return out


def records_evidence(results: ResultsFile) -> bool:
    """Whether the file's references record their gaps (phase records them for every
    reference it writes): then every divergence must carry its evidence, and a missing gap
    is an omission, not the file's age."""
    return any(ref.top2_gaps is not None for ref in results.references)


def _sampled(results: ResultsFile, run: Run, where: str, ctx: Context) -> list[Finding]:
    """A sampled run: regenerable from the file, and claiming no comparison with plain's
    text (see the module's docstring for why that, and not the text, is checked)."""
    problems: list[tuple[str, str]] = []
    if results.config.sampling is None:
        problems.append(("the campaign samples but config.sampling (truncation, seed rule) is "
                         "missing, so this run cannot be regenerated", "$.config.sampling"))
    expected = run_seed(results.config.seed, run.rerun_of or run.id)
    if run.seed != expected:
        problems.append((f"seed is {run.seed}, but the file's seed rule gives {expected} for "
                         f"{run.rerun_of or run.id}: the run cannot be regenerated from the "
                         "file", f"{where}.seed"))
    claimed = [f for f in ("matches_plain", *_EVIDENCE) if getattr(run, f) is not None]
    if claimed:
        problems.append((f"{', '.join(claimed)} recorded on a sampled run: a sampled run "
                         "equals plain sampling in distribution, not plain's greedy text, so "
                         "a token-by-token comparison means nothing", f"{where}.matches_plain"))
    return [ctx.finding("equivalence", "blocking", text, run=run, json_path=path)
            for text, path in problems]


def _reference(ref: PlainReference, i: int, tokens: int, ctx: Context) -> list[Finding]:
    where = f"$.references[{i}]"
    out = []
    if ref.output_sha256 != token_sha256(ref.token_ids):
        out.append(ctx.finding(
            "equivalence", "blocking", "output_sha256 is not the sha256 of its token_ids",
            prompt=ref.prompt, json_path=f"{where}.output_sha256",
        ))
    if len(ref.token_ids) != tokens:
        out.append(ctx.finding(
            "equivalence", "blocking",
            f"the reference has {len(ref.token_ids)} tokens; the campaign generates {tokens}",
            prompt=ref.prompt, json_path=f"{where}.token_ids",
        ))
    if ref.top2_gaps is not None and len(ref.top2_gaps) != len(ref.token_ids):
        out.append(ctx.finding(
            "equivalence", "blocking",
            f"top2_gaps has {len(ref.top2_gaps)} entries for {len(ref.token_ids)} tokens",
            prompt=ref.prompt, json_path=f"{where}.top2_gaps",
        ))
    return out


def _run(run: Run, ref: PlainReference, where: str, settings: RuleSettings,
         ctx: Context, evidence: bool) -> list[Finding]:
    matches, index = compare_to_plain(run.token_ids, ref.token_ids)
    numbers: dict[str, float] = {"tokens": run.tokens}
    if index is not None:
        numbers["first_divergence"] = index
    if run.matches_plain != matches or (run.matches_plain is False
                                        and run.first_divergence != index):
        said = ("not recorded" if run.matches_plain is None else
                f"matches_plain {str(run.matches_plain).lower()}"
                + (f", first_divergence {run.first_divergence}" if run.first_divergence
                   is not None else ""))
        truth = "identical to" if matches else f"differs from token {index} of"
        return [ctx.finding(
            "equivalence", "blocking",
            f"the file says {said}, but the token ids are {truth} the plain reference",
            run=run, numbers=numbers, json_path=f"{where}.matches_plain",
        )]
    if index is None:
        return _no_evidence(run, where, ctx)
    return [_divergence(run, ref, index, where, numbers, settings, ctx, evidence)]


# What a run records only where its output left plain decoding's.
_EVIDENCE = ("first_divergence", "divergence_gap_verify", "divergence_gap_reference")


def _no_evidence(run: Run, where: str, ctx: Context) -> list[Finding]:
    """A run identical to the reference has no divergence, so no evidence of one: a
    recorded first divergence or logit gap there is fabricated or copied from another run."""
    return [ctx.finding(
        "equivalence", "blocking",
        f"{field} is recorded ({getattr(run, field):.6g}), but the token ids are identical to "
        "the plain reference: there is no divergence for it to be evidence of",
        run=run, json_path=f"{where}.{field}",
    ) for field in _EVIDENCE if getattr(run, field) is not None]


def _divergence(run: Run, ref: PlainReference, index: int, where: str,
                numbers: dict[str, float], settings: RuleSettings, ctx: Context,
                evidence: bool) -> Finding:
    recorded = ref.top2_gaps[index] if ref.top2_gaps and index < len(ref.top2_gaps) else None
    gap_ref = run.divergence_gap_reference
    if evidence and (recorded is None or run.divergence_gap_verify is None):
        field, whose = (("divergence_gap_verify", "this run's") if recorded is not None else
                        ("top2_gaps", "the plain reference's"))
        return ctx.finding(
            "equivalence", "blocking",
            f"output differs from plain decoding from token {index}, but {whose} top-2 logit "
            "gap there is not recorded, though this file records the gaps: a divergence "
            "without its evidence cannot be told a near-tie from a mismatch",
            run=run, numbers=numbers,
            json_path=f"{where}.{field}" if recorded is not None else f"{where}.prompt",
        )
    if gap_ref is not None and recorded is not None and gap_ref != recorded:
        return ctx.finding(
            "equivalence", "blocking",
            f"divergence_gap_reference {gap_ref:.4g} is not the reference's own gap "
            f"{recorded:.4g} at token {index}",
            run=run, numbers=numbers, json_path=f"{where}.divergence_gap_reference",
        )
    gap_ref = recorded if gap_ref is None else gap_ref
    gap_verify = run.divergence_gap_verify
    head = f"output differs from plain decoding from token {index} of {run.tokens}"
    numbers["near_tie_gap"] = settings.near_tie_gap
    if gap_ref is None or gap_verify is None:
        return ctx.finding(
            "equivalence", "warning",
            f"{head}; unclassified: the file records no top-2 logit gap there "
            "(it predates the evidence)",
            run=run, numbers=numbers, category="unclassified",
        )
    numbers.update({"gap_verify": gap_verify, "gap_reference": gap_ref})
    gaps = (f"gaps between the two best logits: this run's pass {gap_verify:.4g}, "
            f"plain's {gap_ref:.4g}")
    if gap_verify < settings.near_tie_gap and gap_ref < settings.near_tie_gap:
        return ctx.finding(
            "equivalence", "warning",
            f"{head}; near-tie: {gaps}, both below {settings.near_tie_gap:.4g} "
            "(numerics of two batch shapes, not a decoder bug)",
            run=run, numbers=numbers, category="near-tie",
        )
    return ctx.finding(
        "equivalence", "blocking",
        f"{head}; mismatch: {gaps}, not both below {settings.near_tie_gap:.4g}, so a pass chose "
        "against a clear margin (a decoder bug)",
        run=run, numbers=numbers, category="mismatch",
    )


RULE = Rule(order=110, check=check)

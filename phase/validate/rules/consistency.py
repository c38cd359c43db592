"""consistency (blocking): every run agrees with its own data and with the campaign's config.

Recomputed, never trusted: a run generated the configured number of tokens; it ends after it
starts, and its prefill and decode fit between the two; `steps` is the length of its trace and
`drafted`/`accepted` the sums over it; every target pass yields its accepted proposals plus
one token of its own (tokens = steps + accepted), so no step proposes more than the tokens
left minus one, and a `draft-K` run that drafted proposes exactly k or that many at every
step (the draft model always drafts as many as it may); the steps' proposing and verifying
time fits in `decode_s`; tokens/s is tokens / decode_s; acceptance is accepted / drafted
(and absent exactly when nothing was drafted); `k` is the strategy's and no step proposes
more than k (plain proposes nothing; an adaptive `ngram` run no more than the length its
earlier steps left in force); its prompt and strategy are declared in the config, and its
prompt_tokens is the length of the prompt's token ids where the reference records them (a
serving run, whose fields describe a whole load, is held to its pool, strategy and timing
here and to its requests by the serving rule); it is
disturbed exactly when its recorded CPU or GPU load reaches the file's threshold or its speed
against its cost profile or its condition's earlier runs falls below the file's floors
(phase.analysis.slowdown, recomputed from the file); its id and
order are its place in the campaign's schedule (phase.results.schedule), or for a re-run of
a disturbed run, its slot's re-run place. A file whose runs disagree with themselves cannot
be published: any figure computed from it would depend on which of two contradicting fields
a reader trusted.
"""

from __future__ import annotations

import math

from phase.analysis import slowdown
from phase.analysis.queries import Condition, condition_key
from phase.base.errors import UsageProblem
from phase.policy.ngram_length import GROW, SHRINK, START, lengths
from phase.policy.strategies import Proposing, Strategy, parse_strategy
from phase.results import ResultsFile, Run
from phase.results.levels import reference_for, run_tokens
from phase.results.schedule import ScheduledRun, planned_schedule, rerun
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

# Relative slack for a recorded ratio against the same ratio recomputed (float round-off only).
_REL = 1e-6


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    with slowdown.remembered_speeds():  # each run is judged, and is its condition's reference
        return _check(results, settings, ctx)


def _check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    planned = _planned(results)
    orders: dict[int, str] = {}
    for i, run in enumerate(results.runs):
        # A serving run's fields describe its whole load (phase.results.serving): the one-
        # request checks of its tokens, prompt and steps do not apply to it.
        problems = [
            *_config(run, results),
            *_timing(run, settings),
            *_accounting(run),
            *_strategy(run, results),
            *_steps(run, results, settings),
        ] if run.serving is None else [
            *_served(run, results), *_served_load(run, results, settings)]
        problems += [*_placement(run, planned), *_disturbance(run, results)]
        if run.order in orders:
            problems.append((f"order {run.order} is also run {orders[run.order]!r}'s", "order"))
        orders.setdefault(run.order, run.id)
        for message, field in problems:
            out.append(ctx.finding("consistency", "blocking", message, run=run,
                                   json_path=f"$.runs[{i}].{field}"))
    return out


def _close(recorded: float, expected: float) -> bool:
    return math.isclose(recorded, expected, rel_tol=_REL, abs_tol=1e-12)


def _config(run: Run, results: ResultsFile) -> list[tuple[str, str]]:
    config = results.config
    out = []
    if run.tokens != (expected := run_tokens(config, run.factors)):
        at = " at this tokens level" if expected != config.tokens else ""
        out.append((f"tokens is {run.tokens} but the campaign generates {expected} per run{at}",
                    "tokens"))
    if run.prompt not in {p.name for p in config.prompts}:
        out.append((f"prompt {run.prompt!r} is not declared in $.config.prompts", "prompt"))
    if run.strategy not in config.strategies:
        out.append((f"strategy {run.strategy!r} is not declared in $.config.strategies",
                    "strategy"))
    ref = reference_for(results, run.prompt, run.factors)
    if ref is not None and ref.prompt_token_ids is not None \
            and len(ref.prompt_token_ids) != run.prompt_tokens:
        out.append((f"prompt_tokens is {run.prompt_tokens} but the reference of prompt "
                    f"{run.prompt!r} records {len(ref.prompt_token_ids)} prompt token ids",
                    "prompt_tokens"))
    return out


def _served_load(run: Run, results: ResultsFile,
                 settings: RuleSettings) -> list[tuple[str, str]]:
    """A serving run's load: no request longer than the run's tokens, and the whole load
    (its prefill inside it: admissions happen between steps) between start and end."""
    out = []
    most = run_tokens(results.config, run.factors)
    for j, r in enumerate(run.serving.requests if run.serving else []):
        if r.output_tokens > most:
            out.append((f"request {r.id} generated {r.output_tokens} tokens, more than the "
                        f"{most} per request", f"serving.requests[{j}].output_tokens"))
    span = run.ended_unix_s - run.started_unix_s
    if run.decode_s > span + settings.clock_tolerance_s or run.prefill_s > run.decode_s:
        out.append((f"the load's {run.decode_s:.6g} s (prefill {run.prefill_s:.6g} s inside) "
                    f"do not fit in the run's {span:.6g} s between start and end", "decode_s"))
    return out


def _disturbance(run: Run, results: ResultsFile) -> list[tuple[str, str]]:
    """`disturbed` is what the recorded loads against the file's threshold and the run's
    speed against its profile, its condition's earlier runs and (serving) the campaign's
    earlier prefills make it (phase.analysis.slowdown): a quiet run marked disturbed would
    be left out of every figure, a disturbed one kept would count. The recorded speeds are
    recomputed, never trusted (a merged file keeps its shards' profile ratios: it pools
    their profiles)."""
    out = []
    verdict = slowdown.judge(results, run)
    for name, recorded, expected in (
            ("speed_vs_profile", run.speed_vs_profile, verdict.vs_profile),
            ("speed_vs_condition", run.speed_vs_condition, verdict.vs_condition),
            ("speed_vs_prefill", run.speed_vs_prefill, verdict.vs_prefill)):
        if results.merged_from:
            break
        if (recorded is None) != (expected is None) or (
                recorded is not None and expected is not None
                and not math.isclose(recorded, expected, rel_tol=1e-6)):
            out.append((f"{name} is {recorded}, but the file's runs and profile make it "
                        f"{expected}", name))
    expected_flag, reason = slowdown.disturbed(results, run)
    if run.disturbed == expected_flag:
        return out
    threshold = results.config.disturbed_load
    loads = f"foreign load {run.foreign_load}, GPU busy {run.gpu_busy_before}"
    at = "no threshold ($.config.disturbed_load is null)" if threshold is None \
        else f"the threshold {threshold}"
    why = f" ({reason})" if reason else ""
    out.append((f"disturbed is {str(run.disturbed).lower()}, but its {loads} against {at} "
                f"and its speed make it {str(expected_flag).lower()}{why}", "disturbed"))
    return out


def _timing(run: Run, settings: RuleSettings) -> list[tuple[str, str]]:
    span = run.ended_unix_s - run.started_unix_s
    if span < 0:
        return [(f"ends {-span:.6g} s before it starts", "ended_unix_s")]
    inside = run.prefill_s + run.decode_s
    if inside > span + settings.clock_tolerance_s:
        return [(f"prefill {run.prefill_s:.6g} s + decode {run.decode_s:.6g} s do not fit in the "
                 f"run's {span:.6g} s between start and end", "decode_s")]
    return []


def _served(run: Run, results: ResultsFile) -> list[tuple[str, str]]:
    """What a serving run shares with every run: a declared strategy, its requests' pool as
    its prompt, tokens per second that follow from its tokens and time."""
    out = []
    pool = results.config.serving.pool if results.config.serving else None
    if run.prompt != pool:
        out.append((f"prompt {run.prompt!r} of a serving run is not $.config.serving.pool "
                    f"({pool!r})", "prompt"))
    if run.strategy not in results.config.strategies:
        out.append((f"strategy {run.strategy!r} is not declared in $.config.strategies",
                    "strategy"))
    speed = run.tokens / run.decode_s if run.decode_s > 0 else 0.0
    if not _close(run.tokens_per_s, speed):
        out.append((f"tokens_per_s is {run.tokens_per_s:.6g} but {run.tokens} tokens in "
                    f"{run.decode_s:.6g} s is {speed:.6g}", "tokens_per_s"))
    return out


def _accounting(run: Run) -> list[tuple[str, str]]:
    out = []
    trace = run.trace
    if run.steps != len(trace):
        out.append((f"steps is {run.steps} but the trace has {len(trace)} target passes", "steps"))
    proposed = sum(s.proposed for s in trace)
    kept = sum(s.accepted for s in trace)
    if run.drafted != proposed:
        out.append((f"drafted is {run.drafted} but the trace proposes {proposed}", "drafted"))
    if run.accepted != kept:
        out.append((f"accepted is {run.accepted} but the trace accepts {kept}", "accepted"))
    if run.tokens != run.steps + run.accepted:
        out.append((f"{run.steps} target passes keeping {run.accepted} proposals yield "
                    f"{run.steps + run.accepted} tokens, not {run.tokens}", "tokens"))
    speed = run.tokens / run.decode_s if run.decode_s > 0 else 0.0
    if not _close(run.tokens_per_s, speed):
        out.append((f"tokens_per_s is {run.tokens_per_s:.6g} but {run.tokens} tokens in "
                    f"{run.decode_s:.6g} s is {speed:.6g}", "tokens_per_s"))
    if run.drafted == 0 and run.acceptance is not None:
        out.append((f"acceptance is {run.acceptance:.6g} but nothing was drafted", "acceptance"))
    elif run.drafted > 0:
        rate = run.accepted / run.drafted
        if run.acceptance is None or not _close(run.acceptance, rate):
            shown = "missing" if run.acceptance is None else f"{run.acceptance:.6g}"
            out.append((f"acceptance is {shown} but {run.accepted} of {run.drafted} drafted "
                        f"tokens were accepted ({rate:.6g})", "acceptance"))
    return out


def _parsed(run: Run, results: ResultsFile) -> Strategy | None:
    """The run's strategy as the campaign's settings define it; None for one phase cannot
    parse (only its declaration is checked)."""
    config = results.config
    try:
        return parse_strategy(run.strategy, ngram_n_min=config.ngram_n_min,
                              ngram_n_max=config.ngram_n_max, ngram_k=config.ngram_k,
                              ngram_adaptive=config.ngram_adaptive)
    except UsageProblem:
        return None


def _strategy(run: Run, results: ResultsFile) -> list[tuple[str, str]]:
    strategy = _parsed(run, results)
    if strategy is None:
        return []
    if run.k != strategy.k:
        return [(f"k is {run.k} but strategy {run.strategy!r} proposes at most {strategy.k}",
                 "k")]
    limit = strategy.k or 0
    over = [j for j, s in enumerate(run.trace) if s.proposed > limit]
    if over:
        j = over[0]
        return [(f"step {j} proposes {run.trace[j].proposed} tokens; {run.strategy!r} proposes "
                 f"at most {limit}", f"trace[{j}].proposed")]
    if strategy.adaptive:
        # The length in force at each step follows from the steps before it.
        allowed = lengths(limit, ((s.proposed, s.accepted) for s in run.trace))
        for j, (step, length) in enumerate(zip(run.trace, allowed, strict=True)):
            if step.proposed > length:
                return [(f"step {j} proposes {step.proposed} tokens, but the adaptive ngram "
                         f"length after the steps before it is {length} (it grows by "
                         f"{GROW} after a proposal kept whole, shrinks by {SHRINK} after a "
                         f"rejection, from {START})", f"trace[{j}].proposed")]
    return []


def _steps(run: Run, results: ResultsFile, settings: RuleSettings) -> list[tuple[str, str]]:
    """Each step against the tokens left when it ran, and the trace's time against the decode
    window it was timed in."""
    strategy = _parsed(run, results)
    out = []
    done = 0
    for j, step in enumerate(run.trace):
        # The target's pass adds a token of its own, so a step proposes at most left - 1.
        most = max(run.tokens - done - 1, 0)
        if step.proposed > most:
            out.append((f"step {j} proposes {step.proposed} tokens with {run.tokens - done} "
                        f"left to generate; at most {most} fit before the target's own token",
                        f"trace[{j}].proposed"))
            break
        if (strategy is not None and strategy.family.proposing is Proposing.DRAFT
                and strategy.k is not None
                and run.drafted > 0 and step.proposed <= strategy.k
                and step.proposed != min(strategy.k, most)):
            # The draft model always drafts as many tokens as it may (DraftProposer). A run
            # that drafted nothing at all is judged by the bounds alone.
            out.append((f"step {j} proposes {step.proposed} tokens; {run.strategy!r} drafts "
                        f"exactly {min(strategy.k, most)} there (k, or the tokens left - 1)",
                        f"trace[{j}].proposed"))
            break
        done += step.accepted + 1
    timed_s = sum(s.propose_ms + s.verify_ms for s in run.trace) / 1e3
    if timed_s > run.decode_s + settings.clock_tolerance_s:
        out.append((f"the trace's steps took {timed_s:.6g} s (proposing and verifying), more "
                    f"than the {run.decode_s:.6g} s decode window they were timed in",
                    "trace"))
    return out


def _planned(results: ResultsFile) -> dict[tuple[int, Condition], ScheduledRun]:
    return {(r.repeat, r.condition): r for r in planned_schedule(results.config)}


def _placement(run: Run, planned: dict[tuple[int, Condition], ScheduledRun]) -> list[
        tuple[str, str]]:
    slot = planned.get((run.repeat, condition_key(run)))
    if slot is None:
        return []  # an undeclared condition or a repeat past the config: reported elsewhere
    if run.rerun_of is not None:
        return _rerun_placement(run, slot, len(planned))
    out = []
    if run.id != slot.run_id:
        out.append((f"id {run.id!r} is not the schedule's {slot.run_id!r} for repeat "
                    f"{run.repeat} of this prompt and strategy", "id"))
    if run.order != slot.order:
        out.append((f"order {run.order} is not the schedule's {slot.order} for this run "
                    "(seed and shuffle as configured)", "order"))
    return out


def _rerun_placement(run: Run, slot: ScheduledRun, length: int) -> list[tuple[str, str]]:
    """A re-run fills its slot again: its order is the slot's plus attempt x the schedule's
    length, its id the slot's plus "-rerunN" (phase.results.schedule.rerun)."""
    if run.rerun_of != slot.run_id:
        return [(f"rerun_of {run.rerun_of!r} is not the schedule's {slot.run_id!r} for repeat "
                 f"{run.repeat} of this prompt and strategy", "rerun_of")]
    attempt, rest = divmod(run.order - slot.order, length)
    expected = rerun(slot, max(attempt, 1), length)
    if rest or attempt < 1 or run.id != expected.run_id:
        return [(f"re-run {run.id!r} (order {run.order}) is not a re-run of {slot.run_id!r}'s "
                 f"slot: expected ids '{slot.run_id}-rerunN' at order {slot.order} + N x "
                 f"{length}", "order")]
    return []


RULE = Rule(order=30, check=check)

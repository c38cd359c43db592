"""Disturbance judged by what it did to the run: each run's speed against what the cost
profile predicts for it, and against its condition's other runs.

Foreign load alone misses what matters: llama.cpp's thread pool can lose a third of its
speed to a few percent of other work (issue 44: a run at 7% foreign load ran at 0.68x its
repeat; a draft-8 run at 5.5% at about half its quiet speed). So a run is also disturbed when
it decoded slower than this machine's noise allows:

    vs profile     predicted / measured ms of its target passes (its own steps priced by
                   the profile at its fill, phase.costmodel.predict; the measured ones its
                   trace's verify_ms); below config.slow_vs_profile (a generous floor: a
                   shared host drifts after profiling)
    vs condition   its speed over the median of its condition's other runs on its host
                   that ran in its repeat or earlier (other slots' attempts only, never its
                   own slot's), leaving out runs disturbed by load or by the profile test;
                   below config.slow_vs_condition. Speed: against its own steps as the
                   profile prices them (a sampled run's acceptance varies by seed), tokens/s
                   where the file has no profile

    vs prefill     a serving run only: the prompt tokens per second of its requests' target
                   prefill passes (ServingRequest.prefill_s) over the median of the
                   campaign's serving runs on its host that started before it, any strategy
                   and level (other slots only, none disturbed by load; at least
                   PREFILL_REFERENCES of them); below config.slow_vs_prefill. Every run
                   prefills the same prompts into the target alone, whatever it decodes
                   with, so this is the one yardstick a serving run's first repeat has
                   (serving runs are not priced by the profile; the runs that showed the
                   need: bench/results/notes-from-docstrings.md)

The order problem: a run's condition has no later runs when it ends, so it is judged against
the ones before it: the profile at once, the condition from its second repeat on (a first
repeat's runs are judged by load and profile only). Every input is in the results file, so
validation re-derives each judgement from the file alone (rule consistency), and a campaign
resumed or not judges the same runs the same way. A merged file pools its shards' profiles
(phase.campaign.merge), so there each run's recorded ratios stand.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from phase.analysis.queries import condition_key, is_disturbed
from phase.costmodel import NoCost, cost_table
from phase.policy.strategies import run_terms
from phase.results import ResultsFile, Run

# Earlier serving runs a prefill speed is compared with, at least: one run's prefill is
# one sample of the machine, too few to call another run slow against.
PREFILL_REFERENCES = 2


@dataclass(frozen=True)
class Judgement:
    """What the run's speed said: each ratio (None: not measured, with no threshold or no
    reference), and whether any is below its floor, with the numbers in words."""

    vs_profile: float | None
    vs_condition: float | None
    reference_runs: int
    disturbed: bool
    reason: str | None
    vs_prefill: float | None = None


def slot_of(run: Run) -> str:
    """The scheduled slot a run fills (a re-run names the slot it fills again)."""
    return run.rerun_of or run.id


# Speeds already priced while a whole file is judged (`remembered_speeds`): each run is a
# reference of its condition's every later run, and its steps were priced again each time
# (a file of 800 runs: 4,700 pricings of every step). Keyed by the objects' ids, and holding
# the objects so that no id is reused while its entry stands.
_SPEEDS: ContextVar[dict[tuple[int, int, bool], tuple[object, Run, float | None]] | None] = \
    ContextVar("phase_slowdown_speeds", default=None)


@contextmanager
def remembered_speeds() -> Iterator[None]:
    """Within the block, each run's predicted speed is priced once per profile (the block
    must not change a run's steps or times, nor the profile)."""
    token = _SPEEDS.set({})
    try:
        yield
    finally:
        _SPEEDS.reset(token)


def predicted_speed(results: ResultsFile, run: Run, *, whole: bool = False) -> float | None:
    """Predicted over measured time of the run's first pass (1.0: as predicted, 0.5: at half
    the predicted speed): of its target passes (the profile times exactly those; proposing
    and the loop around the passes are priced less closely, `auto`'s decisions and a small
    model's Python not at all), or `whole`, of its decode against every term. None without
    a profile, a positive time or a price."""
    memo = _SPEEDS.get()
    if memo is None:
        return _predicted_speed(results, run, whole)
    key = (id(results.profile), id(run), whole)
    if key not in memo:
        memo[key] = (results.profile, run, _predicted_speed(results, run, whole))
    return memo[key][2]


def _predicted_speed(results: ResultsFile, run: Run, whole: bool) -> float | None:
    profile = results.profile
    if profile is None:
        return None
    measured_ms = (run.decode_s * 1e3 if whole
                   else sum(step.verify_ms for step in run.trace))
    if measured_ms <= 0:
        return None
    try:
        table = cost_table(profile, run.prompt_tokens + run.tokens // 2)
        terms = run_terms(run.trace, run.strategy, table)
    except NoCost:
        return None
    predicted_ms = terms.total if whole else terms.target
    return predicted_ms / measured_ms if predicted_ms > 0 else None


def profile_speed(results: ResultsFile, run: Run) -> float | None:
    """The run's ratio to its profile's prediction as judged: recomputed, except in a merged
    file, which no longer holds the profile each run was judged with: there the run's
    recorded ratio stands (checked in its shard's own file before the merge)."""
    if results.merged_from:
        return run.speed_vs_profile
    return predicted_speed(results, run)


def _load_disturbed(results: ResultsFile, run: Run) -> bool:
    return is_disturbed(run.foreign_load, run.gpu_busy_before, results.config.disturbed_load)


def _profile_slow(ratio: float | None, floor: float | None) -> bool:
    return ratio is not None and floor is not None and ratio < floor


def references(results: ResultsFile, run: Run, runs: Sequence[Run] | None = None) -> list[Run]:
    """The runs `run` is compared with: its condition's, on its host, in its repeat or before,
    other slots only, none disturbed by load or by the profile test."""
    floor = results.config.slow_vs_profile
    key, slot = condition_key(run), slot_of(run)
    return [
        other for other in (results.runs if runs is None else runs)
        if condition_key(other) == key and other.host == run.host
        and other.repeat <= run.repeat and slot_of(other) != slot
        and not _load_disturbed(results, other)
        and not _profile_slow(profile_speed(results, other), floor)
    ]


def prefill_rate(run: Run) -> float | None:
    """Prompt tokens per second of a serving run's target prefill passes; None for a
    one-request run or where none is recorded (older files)."""
    if run.serving is None:
        return None
    timed = [(r.prompt_tokens - 1, r.prefill_s) for r in run.serving.requests
             if r.prefill_s is not None]
    seconds = sum(t for _, t in timed)
    return sum(n for n, _ in timed) / seconds if timed and seconds > 0 else None


def prefill_references(results: ResultsFile, run: Run,
                       runs: Sequence[Run] | None = None) -> list[Run]:
    """The serving runs `run`'s prefill speed may be compared with: on its host, started
    before it, other slots only, none disturbed by load (those with a prefill speed count)."""
    slot = slot_of(run)
    return [
        other for other in (results.runs if runs is None else runs)
        if other.host == run.host and other.started_unix_s < run.started_unix_s
        and slot_of(other) != slot and not _load_disturbed(results, other)
    ]


def _vs_prefill(results: ResultsFile, run: Run,
                runs: Sequence[Run] | None) -> tuple[float | None, int]:
    """(the run's prefill speed over its references' median, how many there were)."""
    if results.merged_from:
        return run.speed_vs_prefill, 0
    own = prefill_rate(run)
    if own is None:
        return None, 0
    rates = [r for r in map(prefill_rate, prefill_references(results, run, runs))
             if r is not None]
    if len(rates) < PREFILL_REFERENCES:
        return None, len(rates)
    median = statistics.median(rates)
    return (own / median if median > 0 else None), len(rates)


def _speeds(results: ResultsFile, runs: Sequence[Run]) -> list[float]:
    """What the condition test compares: each run's whole decode against its own steps as
    the profile prices them, where every one of them is priced (a sampled run's acceptance,
    and so its tokens/s, differs from seed to seed; a greedy run's steps repeat, and the
    ratio is its tokens/s ratio; a term the profile misprices is off alike in every run of
    the condition); else tokens/s."""
    priced = [predicted_speed(results, r, whole=True) for r in runs]
    if all(v is not None for v in priced):
        return [v for v in priced if v is not None]
    return [r.tokens_per_s for r in runs]


def _x(ratio: float, floor: float) -> str:
    """`0.52x`; one more digit where two would read as the floor itself (0.7995 < 0.80)."""
    text = f"{ratio:.2f}x"
    return f"{ratio:.3f}x" if text == f"{floor:.2f}x" else text


def judge(results: ResultsFile, run: Run, runs: Sequence[Run] | None = None) -> Judgement:
    """The slowdown judgement of `run` among `runs` (default: the file's)."""
    config = results.config
    p_floor, c_floor = config.slow_vs_profile, config.slow_vs_condition
    vs_profile = profile_speed(results, run) if p_floor is not None else None
    vs_condition, n = None, 0
    if results.merged_from:
        vs_condition = run.speed_vs_condition
    elif c_floor is not None:
        refs = references(results, run, runs)
        n = len(refs)
        if refs:
            speeds = _speeds(results, [run, *refs])
            median = statistics.median(speeds[1:])
            vs_condition = speeds[0] / median if median > 0 else None
    f_floor = config.slow_vs_prefill
    vs_prefill, n_prefill = (_vs_prefill(results, run, runs) if f_floor is not None
                             else (None, 0))
    reasons = []
    if vs_profile is not None and p_floor is not None and vs_profile < p_floor:
        reasons.append(f"{_x(vs_profile, p_floor)} the speed its cost profile predicts, "
                       f"beyond the noise floor {p_floor:.2f}x")
    if vs_condition is not None and c_floor is not None and vs_condition < c_floor:
        reasons.append(f"{_x(vs_condition, c_floor)} its condition's median ({n} earlier run"
                       f"{'s' if n != 1 else ''}), beyond the noise floor {c_floor:.2f}x")
    if vs_prefill is not None and f_floor is not None and vs_prefill < f_floor:
        reasons.append(f"prefill at {_x(vs_prefill, f_floor)} the median of the campaign's "
                       f"earlier serving runs ({n_prefill}), beyond the noise floor "
                       f"{f_floor:.2f}x")
    return Judgement(vs_profile, vs_condition, n, bool(reasons),
                     "; ".join(reasons) if reasons else None, vs_prefill)


def disturbed(results: ResultsFile, run: Run,
              runs: Sequence[Run] | None = None) -> tuple[bool, str | None]:
    """Whether the run is disturbed, by load or by slowdown, and why (None: not)."""
    load = _load_disturbed(results, run)
    slow = judge(results, run, runs)
    reasons = []
    threshold = results.config.disturbed_load
    if load and threshold is not None:
        what = [f"{name} {value:.0%}" for name, value in (
            ("foreign load", run.foreign_load), ("GPU busy", run.gpu_busy_before))
            if value is not None and value >= threshold]
        reasons.append(f"{', '.join(what)} at or over {threshold:.0%}")
    if slow.reason:
        reasons.append(slow.reason)
    return load or slow.disturbed, "; ".join(reasons) if reasons else None

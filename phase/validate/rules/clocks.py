"""clocks: every timestamp the file records lies where the way phase measures puts it.

A campaign creates its file (`created`), then runs its schedule one run at a time on each
host: a run starts after the file was created (a merged file's shards after their own
`merged_from[].created`, and the merged `created` is the earliest of them), and on one host
the runs follow their recorded `order` without overlapping (the next run starts after the
previous one ended; a re-run of a disturbed run comes at the end of its repeat). Blocking: a
run stamped outside that, which no measurement produces,
means the run's clock or its place is wrong and every comparison in time with it is too.
Where two neighbours overlap, the one named is the run that left an unusually long gap on
its other side (a run stamped late follows its predecessor by more than usual; one stamped
early precedes its successor by more); the later one where neither did.

Each sensor's energy window lies inside its run (it opens after the prefill and closes when
the decode ends), and its raw samples are seconds since the run's idle window began:
non-negative, in time order, and no later than the run plus its idle window and the reads
that follow a coarse counter past the window's end. Rejected (that sensor in that run): a
window or a trace on another clock (monotonic seconds since boot, milliseconds, a trace in
Unix seconds) does not measure this run. `clock_tolerance_s` is the slack for each
comparison.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import datetime
from itertools import pairwise
from math import inf

from phase.results import ResultsFile, Run, SensorInfo
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings
from phase.validate.sharding import machine_of

# Reads of a coarse counter may go on after a window ends until its next update (the sampler
# waits up to 2.5 update periods plus 50 ms; a self-stamped meter 5 smoothing times plus 1 s).
_FOLLOW_PERIODS = 2.5
_FOLLOW_SMOOTHING = 5.0
_FOLLOW_S = 1.0


def _unix(moment: datetime) -> float:
    return moment.timestamp()


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    index = {id(run): i for i, run in enumerate(results.runs)}
    out = _campaign_span(results, settings, ctx, index)
    out += _order(results, settings, ctx, index)
    sensors = {s.name: s for s in results.sensors}
    for i, run in enumerate(results.runs):
        out += _windows(run, i, settings, ctx)
        out += _traces(run, i, results, sensors, settings, ctx)
    return out


def _campaign_span(results: ResultsFile, settings: RuleSettings, ctx: Context,
                   index: dict[int, int]) -> list[Finding]:
    out = []
    created = _unix(results.created)
    shard_created: dict[str, float] = {}
    for m in results.merged_from:
        shard_created[m.hostname] = min(_unix(m.created), shard_created.get(m.hostname, inf))
    if results.merged_from:
        earliest = min(shard_created.values())
        if abs(created - earliest) > settings.clock_tolerance_s:
            out.append(ctx.finding(
                "clocks", "blocking",
                f"created is {results.created.isoformat()}, but a merged file is created at its "
                f"earliest shard's time "
                f"({min(m.created for m in results.merged_from).isoformat()})",
                numbers={"created_unix_s": created, "earliest_shard_unix_s": earliest},
                json_path="$.created",
            ))
    for run in results.runs:
        since, what = created, "the campaign was created"
        if run.host in shard_created:
            since, what = shard_created[run.host], f"its shard's file was created on {run.host}"
        early = since - run.started_unix_s
        if early > settings.clock_tolerance_s:
            out.append(ctx.finding(
                "clocks", "blocking",
                f"starts {early:.6g} s before {what}: a run is measured after its campaign "
                "file exists",
                run=run, numbers={"started_unix_s": run.started_unix_s, "created_unix_s": since,
                                  "early_s": early},
                json_path=f"$.runs[{index[id(run)]}].started_unix_s",
            ))
    return out


def _sequence(run: Run) -> tuple[int, int, float]:
    """Where a run falls in a host's sequence: by `order`, except that a re-run of a disturbed
    run (Run.rerun_of) runs at the end of its repeat, before the next repeat's runs, though its
    order is past the schedule's (phase.results.schedule.rerun); re-runs among themselves are
    shuffled, so by start time."""
    if run.rerun_of is not None:
        return run.repeat, 1, run.started_unix_s
    return run.repeat, 0, float(run.order)


def _order(results: ResultsFile, settings: RuleSettings, ctx: Context,
           index: dict[int, int]) -> list[Finding]:
    """On each host, runs in their recorded order, none starting before the previous ended."""
    by_host: dict[str | None, list[Run]] = defaultdict(list)
    machine = machine_of(results)  # two machines sharing a host name are told apart by shard
    for run in results.runs:
        by_host[machine(run)].append(run)
    out: list[Finding] = []
    for runs in by_host.values():
        runs = sorted(runs, key=_sequence)
        gaps = [b.started_unix_s - a.ended_unix_s for a, b in pairwise(runs)]
        usual = statistics.median(gaps) if gaps else 0.0
        blamed: set[str] = set()
        for j, gap in enumerate(gaps):
            if gap >= -settings.clock_tolerance_s:
                continue
            before, after = runs[j], runs[j + 1]
            # The run that moved left an unusually long gap on its other side: a run stamped
            # late, after its predecessor; a run stamped early, before its successor.
            prev_gap = gaps[j - 1] if j > 0 else usual
            next_gap = gaps[j + 1] if j + 1 < len(gaps) else usual
            odd = before if prev_gap > next_gap else after
            other = after if odd is before else before
            if odd.id in blamed:
                continue
            blamed.add(odd.id)
            side = "ended after" if odd is before else "started before"
            field = "ended_unix_s" if odd is before else "started_unix_s"
            out.append(ctx.finding(
                "clocks", "blocking",
                f"order {odd.order}: overlaps run {other.id!r} (order {other.order}) on "
                f"{'host ' + str(machine(odd)) if odd.host else 'this host'}: it {side} "
                f"{'the next run started' if odd is before else 'the previous run ended'} "
                f"({-gap:.6g} s); one host runs one run at a time, in order",
                run=odd, numbers={"overlap_s": -gap, "usual_gap_s": usual},
                json_path=f"$.runs[{index[id(odd)]}].{field}",
            ))
    return out


def _windows(run: Run, i: int, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out = []
    tol = settings.clock_tolerance_s
    for j, w in enumerate(run.energy):
        early = run.started_unix_s - w.start_unix_s
        late = w.end_unix_s - run.ended_unix_s
        if early <= tol and late <= tol:
            continue
        where = "start_unix_s" if early > tol else "end_unix_s"
        out.append(ctx.finding(
            "clocks", "rejected",
            f"the energy window [{w.start_unix_s:.6f}, {w.end_unix_s:.6f}] does not lie inside "
            f"its run [{run.started_unix_s:.6f}, {run.ended_unix_s:.6f}] (Unix seconds): a "
            "window stamped on another clock does not measure this run",
            run=run, sensor=w.sensor,
            numbers={"start_unix_s": w.start_unix_s, "end_unix_s": w.end_unix_s,
                     "run_started_unix_s": run.started_unix_s,
                     "run_ended_unix_s": run.ended_unix_s},
            json_path=f"$.runs[{i}].energy[{j}].{where}",
        ))
    return out


def _trace_span_s(run: Run, results: ResultsFile, info: SensorInfo | None) -> float:
    """The latest a sample may lie after the idle window's start: the idle window, the run,
    and the reads that follow a coarse counter or a meter past the window's end."""
    follow = _FOLLOW_S
    if info is not None:
        follow += max(_FOLLOW_PERIODS * (info.update_period_s or 0.0),
                      _FOLLOW_SMOOTHING * info.smoothing_s)
    return (results.config.idle_window_s + (run.ended_unix_s - run.started_unix_s) + follow)


def _traces(run: Run, i: int, results: ResultsFile, sensors: dict[str, SensorInfo],
            settings: RuleSettings, ctx: Context) -> list[Finding]:
    out = []
    tol = settings.clock_tolerance_s
    for j, trace in enumerate(run.samples):
        if not trace.t_s:
            continue
        span = _trace_span_s(run, results, sensors.get(trace.sensor))
        backwards = next((k for k in range(1, len(trace.t_s))
                          if trace.t_s[k] < trace.t_s[k - 1]), None)
        problem = None
        if trace.t_s[0] < -tol:
            problem = (f"its first sample is at {trace.t_s[0]:.6g} s, before the idle window "
                       "began", 0)
        elif backwards is not None:
            problem = (f"sample {backwards} is at {trace.t_s[backwards]:.6g} s, before sample "
                       f"{backwards - 1} ({trace.t_s[backwards - 1]:.6g} s)", backwards)
        elif trace.t_s[-1] > span + tol:
            problem = (f"its last sample is at {trace.t_s[-1]:.6g} s, past the {span:.6g} s that "
                       "the idle window, the run and the reads after its end can span",
                       len(trace.t_s) - 1)
        if problem is None:
            continue
        text, k = problem
        out.append(ctx.finding(
            "clocks", "rejected",
            f"the raw samples are seconds since the run's idle window began, but {text}: "
            "a trace on another clock does not measure this run",
            run=run, sensor=trace.sensor,
            numbers={"t_s": trace.t_s[k], "max_t_s": span},
            json_path=f"$.runs[{i}].samples[{j}].t_s[{k}]",
        ))
    return out


RULE = Rule(order=120, check=check)

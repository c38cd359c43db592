"""counter-edges (rejected; blocking): a counter window whose edges leave too much of it
uncertain, or whose recorded edge error is smaller than the counter's updates allow.

An energy counter is only known at its updates (NVML every 20-100 ms, Apple IOReport about
every 2 s). Where a window's edges fall between updates, its energy can be off by up to the
window's recorded `edge_error_j` (phase.sensors.core.edges), most of one update's energy at the
end edge. Like the under-read of a lagged power reading (sensor-lag), that value is rejected
when the error exceeds `lag_bias_max` of the energy, so short windows on coarse counters
are rejected instead of published. A window without a recorded edge error (older files, a
backend that did not estimate one) is judged by the bound its sensor's declared update
period gives: the read at each edge may be up to one period stale, and the two edges' errors
cancel but for the difference in power across them, so the energy is uncertain by at most
one period's energy at the highest power near the edges (the sampler's own edge bound: a
margin over the window's and the idle window's mean power, capped by the sensor's maximum;
phase.sensors.core.energy.edge_power). Power sensors, and counters that declare no period, are
not judged here.

Blocking: a recorded `edge_error_j` below the least its counter's declared update period
allows wherever the edges fall (`least_edge_error`): a counter known only at its updates
cannot have been read more exactly than that, and a smaller error would pass windows this
rule exists to reject.

`min_window_s` turns the same bound around: the shortest window this rule passes for a
counter of a given update period, which a campaign sizes its energy windows to
(phase.campaign.windows).
"""

from __future__ import annotations

import math

from phase.analysis import measured_windows, sensors_by_name, window_s
from phase.results import ResultsFile, SensorInfo, SensorWindow
from phase.sensors.core.energy import EDGE_POWER_MARGIN, WindowSpec, edge_power
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    sensors = sensors_by_name(results)
    index = {id(run): i for i, run in enumerate(results.runs)}
    for run, w, info in measured_windows(results):
        if info.kind != "counter" or w.energy_j is None:
            continue
        floor = least_edge_error(w, info)
        if w.edge_error_j is not None and floor is not None \
                and w.edge_error_j + settings.resolution_j(info.backend) < floor:
            out.append(ctx.finding(
                "counter-edges", "blocking",
                f"the window records an edge error of {w.edge_error_j:.3g} J, but a counter "
                f"updating every {info.update_period_s:.3g} s leaves a {window_s(w):.3g} s "
                f"window's edges uncertain by at least {floor:.3g} J wherever they fall "
                "between its updates: the recorded error is smaller than its updates allow",
                run=run, sensor=info.name,
                json_path=(f"$.runs[{index[id(run)]}].energy[{run.energy.index(w)}]."
                           "edge_error_j"),
                numbers={"edge_error_j": w.edge_error_j, "least_edge_error_j": floor,
                         "update_period_s": info.update_period_s or 0.0,
                         "window_s": window_s(w)}))
            continue
        edge_error, derived = _edge_error(w, info)
        if edge_error is None or (derived and ctx.is_rejected(run.id, info.name)):
            continue  # nothing to judge, or a value already rejected on firmer ground
        share = edge_error / w.energy_j if w.energy_j > 0 else math.inf
        if share <= settings.lag_bias_max:
            continue
        window = window_s(w)
        needed = window * share / settings.lag_bias_max if math.isfinite(share) else math.inf
        period = sensors[w.sensor].update_period_s
        every = f"updates every {period:.3g} s, so " if period else ""
        how = (" (no edge error recorded: the bound its declared update period gives)"
               if derived else "")
        out.append(ctx.finding(
            "counter-edges",
            "rejected",
            f"the counter {every}this {window:.3g} s window's energy is uncertain by "
            f"±{edge_error:.3g} J{how} ({share:.1%} of it; limit "
            f"{settings.lag_bias_max:.1%}); about {needed:.3g} s or more would pass",
            run=run,
            sensor=info.name,
            json_path=(f"$.runs[{index[id(run)]}].energy[{run.energy.index(w)}]."
                       f"{'energy_j' if derived else 'edge_error_j'}"),
            numbers={
                "edge_error_j": edge_error,
                "energy_j": w.energy_j,
                "share": share,
                "limit": settings.lag_bias_max,
                "window_s": window,
                "min_window_s": needed,
            },
        ))
    return out


def _edge_error(w: SensorWindow, info: SensorInfo) -> tuple[float | None, bool]:
    """(the window's edge error, whether it was derived from the declared update period)."""
    if w.edge_error_j is not None:
        return w.edge_error_j, False
    period = info.update_period_s
    if not period or w.energy_j is None:
        return None, False
    spec = WindowSpec(name=info.name, kind="counter", max_power_w=info.max_power_w,
                      update_period_s=period)
    near = edge_power(spec, w.energy_j, window_s(w), w.idle_power_w).bound_w
    return (None, False) if near is None else (near * period, True)


# How much of the idealised least error (least_edge_error) a recorded one must reach: the
# power across an edge can dip below both means it is modelled by.
LEAST_SHARE = 0.5


def least_edge_error(w: SensorWindow, info: SensorInfo) -> float | None:
    """The least edge error a window on this counter can have, LEAST_SHARE of the ideal: each
    edge between two updates a period p apart is known only within what monotonicity and the
    power bound B allow (phase.sensors.core.edges.read_edge), an interval of width
    min(dU, B g) - max(0, dU - B (p - g)) at g past an update (dU: one update's energy, at the
    lower of the window's and the idle power), and the recorded error is at least half its
    width. The two edges are a window's length apart, so their offsets differ by T mod p;
    the least error is the smallest sum over where the first edge falls. None: nothing
    declared to judge by (no period, no energy, no power bound)."""
    period = info.update_period_s
    if not period or w.energy_j is None or w.energy_j <= 0 or window_s(w) <= 0:
        return None
    span = window_s(w)
    spec = WindowSpec(name=info.name, kind="counter", max_power_w=info.max_power_w,
                      update_period_s=period)
    bound = edge_power(spec, w.energy_j, span, w.idle_power_w).bound_w
    mean = w.energy_j / span
    low = min(mean, w.idle_power_w) if w.idle_power_w and w.idle_power_w > 0 else mean
    if bound is None or bound <= 0:
        return None
    step = low * period

    def half_width(g: float) -> float:
        return max(min(step, bound * g) - max(0.0, step - bound * (period - g)), 0.0) / 2

    # Each half width is linear between its kinks (step / bound after an update, as long
    # before the next), so the sum's least value over the first edge's offset g is at a g
    # that puts one edge on a kink.
    shift = span % period
    kinks = (0.0, step / bound, period - step / bound)
    offsets = {k % period for k in kinks} | {(k - shift) % period for k in kinks}
    least = min(half_width(g) + half_width((g + shift) % period) for g in offsets)
    return LEAST_SHARE * least


def min_window_s(period_s: float, settings: RuleSettings, *, edges: int = 1) -> float:
    """The shortest window whose energy this rule passes on a counter updating every
    `period_s`, when `edges` of its edges are each uncertain by up to one period's energy at
    the edge bound (EDGE_POWER_MARGIN x the window's mean power: the bound `_edge_error` judges
    a window without a recorded edge error by). With energy = mean power x T, the share is
    edges x margin x period / T, so T >= edges x margin x period / lag_bias_max. One edge
    where the window starts on one of the counter's updates (phase.sensors.core.sampler aligns it)
    and the end is bracketed by reading the counter until its next update; two otherwise."""
    if period_s <= 0:
        return 0.0
    if settings.lag_bias_max <= 0:
        return math.inf
    return edges * EDGE_POWER_MARGIN * period_s / settings.lag_bias_max


RULE = Rule(order=180, check=check)

"""Energy windows sized to the sensor: how long a run's energy window must be, and how many
back-to-back passes of its decode fill it.

A counter is only known at its updates and a smoothed power reading lags, so a window too
short for the primary (chip) energy sensor is rejected by the validator's counter-edges or
sensor-lag rule (bench/results/device-campaign-h200.md records such rejections on a GPU
whose counter updates every 100 ms). Before the runs, from each primary
sensor's measured update period and declared smoothing, `size_window` computes the shortest
window both rules pass, with the rules' own limits and bounds (RuleSettings.lag_bias_max,
`counter_edges.min_window_s`, `lag.min_window`), never restated here. A run whose decode is
shorter repeats it back-to-back inside one energy window (Engine.run's min_window_s: same
prompt, generated cache dropped, greedy, so the same tokens) until the window is that long;
`Run.passes` records every pass's time and output, and energy per token is the window's
energy over all passes' tokens (phase.analysis.window_tokens).

Where the counter's updates can be seen (measured period above the sampler's
FOLLOW_MIN_PERIOD_S), the window starts on one (Sampler.begin's align_to) and the sampler
already brackets the end by reading on to the next update: only one edge is then uncertain
by up to a period's energy. Otherwise both are.

`plan_windows` shows the campaign, before its runs, the passes each condition is expected to
need, from the cost profile's expected decode time: plain's from its one-token pass, a
speculative strategy's the shortest its passes allow (every proposal kept), so its count is
the most it should need; the runs decide the real count pass by pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass

from phase.costmodel import CostTable, NoCost, cost_table
from phase.policy.strategies import Strategy, proposer_families
from phase.results import CostProfile, PrimaryEnergy, SensorInfo
from phase.sensors.core.sampler import FOLLOW_MIN_PERIOD_S
from phase.validate.lag import min_window
from phase.validate.rules.counter_edges import min_window_s as counter_edges_min_window_s
from phase.validate.settings import DEFAULT_SETTINGS, RuleSettings

# The window a run decodes to is this much longer than the rules' bound: the bound is on the
# window's mean power, the sampler's window is read a hair after the decode's own clock.
MARGIN = 1.1


@dataclass(frozen=True)
class SensorNeed:
    """What one sensor needs of a window: counter-edges' and sensor-lag's shortest."""

    sensor: str
    period_s: float | None
    smoothing_s: float
    aligned: bool  # the window starts on one of this counter's updates
    edges_s: float  # 0 for a power reading, or a counter whose period was not measured
    lag_s: float

    @property
    def window_s(self) -> float:
        return max(self.edges_s, self.lag_s)

    def describe(self) -> str:
        parts = []
        if self.period_s is not None and self.edges_s > 0:
            edges = "1 edge (start aligned to an update)" if self.aligned else "2 edges"
            parts.append(f"counter-edges {self.edges_s:.3g} s (updates every "
                         f"{self.period_s:.3g} s, {edges})")
        if self.lag_s > 0:
            parts.append(f"sensor-lag {self.lag_s:.3g} s (smoothing {self.smoothing_s:.3g} s)")
        return f"{self.sensor}: " + ("; ".join(parts) or "any window")


def sensor_need(info: SensorInfo, settings: RuleSettings = DEFAULT_SETTINGS,
                aligned: bool = False) -> SensorNeed:
    """The shortest window the counter-edges and sensor-lag rules pass for this sensor."""
    lag_s = min_window(info.smoothing_s, settings.lag_bias_max)
    period = info.update_period_s
    edges_s = 0.0
    if info.kind == "counter" and period:
        edges_s = counter_edges_min_window_s(period, settings, edges=1 if aligned else 2)
    return SensorNeed(info.name, period, info.smoothing_s, aligned and bool(period),
                      edges_s, lag_s)


def observable_ticks(info: SensorInfo) -> bool:
    """Whether a window can start on this counter's update: the sampler sees them."""
    return (info.kind == "counter" and info.update_period_s is not None
            and info.update_period_s > FOLLOW_MIN_PERIOD_S)


@dataclass(frozen=True)
class WindowSize:
    """The campaign's energy window: at least `min_s` (None: not sized, `reason` says why),
    starting on an update of the counters in `align_to`."""

    min_s: float | None
    reason: str
    align_to: tuple[str, ...] = ()
    needs: tuple[SensorNeed, ...] = ()


def size_window(sensors: Sequence[SensorInfo], primary: PrimaryEnergy | None,
                settings: RuleSettings = DEFAULT_SETTINGS, *, enabled: bool = True,
                margin: float = MARGIN) -> WindowSize:
    """The shortest energy window every primary (chip) energy sensor passes both rules on,
    times `margin`. Other sensors are judged by the rules as before, not sized for: a board
    sensor smoothed over 1 s would need 20 s windows."""
    if not enabled:
        return WindowSize(None, "window sizing is off in the plan (size_windows=False)")
    if primary is None:
        return WindowSize(None, "no primary energy sensor: nothing to size the window for")
    infos = {s.name: s for s in sensors}
    chosen = [infos[n] for n in primary.sensors if n in infos]
    if not chosen:
        return WindowSize(None, "the primary energy sensors are not among the sampled ones")
    # Align to the coarsest counter whose updates show: its edge is the costliest.
    ticking = sorted((s for s in chosen if observable_ticks(s)),
                     key=lambda s: s.update_period_s or 0.0, reverse=True)
    align = ticking[0].name if ticking else None
    needs = tuple(sensor_need(s, settings, aligned=s.name == align) for s in chosen)
    unmeasured = [s.name for s in chosen if s.kind == "counter" and not s.update_period_s]
    shortest = max(n.window_s for n in needs)
    text = "; ".join(n.describe() for n in needs)
    if unmeasured:
        text += (f"; {', '.join(unmeasured)}: update period not measured, so counter-edges "
                 "cannot be sized for (judged on the recorded edge error)")
    if not math.isfinite(shortest):
        return WindowSize(None, f"no window passes the rules: {text}", (), needs)
    return WindowSize(shortest * margin, f"{text}; x{margin:g} margin",
                      (align,) if align else (), needs)


@dataclass(frozen=True)
class PlannedWindow:
    """One condition's window: its expected decode time and the passes that fill it."""

    prompt: str
    strategy: str
    expected_decode_s: float | None
    basis: str  # where the expectation comes from
    passes: int | None

    @property
    def window_s(self) -> float | None:
        if self.expected_decode_s is None or self.passes is None:
            return None
        return self.expected_decode_s * self.passes


def passes_for(expected_decode_s: float, min_window_s: float | None, max_passes: int) -> int:
    """Passes of a decode expected to last `expected_decode_s` that fill a window of
    `min_window_s` (one where it needs no more, or the window is not sized), at most
    `max_passes`."""
    if not min_window_s or expected_decode_s >= min_window_s:
        return 1
    if expected_decode_s <= 0:
        return max_passes
    return max(1, min(max_passes, math.ceil(min_window_s / expected_decode_s - 1e-9)))


def shortest_decode_s(table: CostTable, strategy: Strategy, tokens: int) -> float:
    """The decode time a strategy's passes allow at best, in seconds: plain's is its
    expected time (one one-token pass per token); a speculative step keeps at most its k
    proposals plus the target's own token, so every proposal kept is its shortest."""
    plain_ms = tokens * table.plain()
    fam = strategy.family
    if not fam.takes_k:
        return plain_ms / 1e3
    options = []
    # A family that decides per step (auto) may use any proposer, any k up to its own, or none.
    ks = range(1, strategy.max_proposal + 1) if fam.decides else [strategy.max_proposal]
    uses = [f for f in proposer_families() if fam.decides or f is fam]
    for k in ks:
        steps = math.ceil(tokens / (k + 1))
        for f in uses:
            # Its step's cost with every proposal kept (draft-k: the mirror of the last
            # verification, k proposals, the verification; n-gram: a lookup and the
            # verification); none where the table lacks its costs (no draft profiled).
            if (expected := f.expected()) is not None:
                with suppress(NoCost):
                    options.append(steps * expected(table, [1.0] * k, k).cost_per_step)
    if fam.decides:
        options.append(plain_ms)
    return (min(options) if options else plain_ms) / 1e3


def plan_windows(size: WindowSize, strategies: Mapping[str, Strategy],
                 prompt_tokens: Mapping[str, int], tokens: int, max_passes: int,
                 profile: CostProfile | None,
                 plain_decode_s: Mapping[str, float] | None = None) -> list[PlannedWindow]:
    """Per prompt x strategy: the expected decode time and the passes it needs. From the
    profile where there is one; else plain's from its reference decode (`plain_decode_s`,
    timed before the runs) and the others' unknown (decided as they run)."""
    out = []
    for prompt, length in prompt_tokens.items():
        table = None
        if profile is not None:
            try:
                table = cost_table(profile, length + tokens // 2)
            except NoCost:
                table = None
        for name, strategy in strategies.items():
            expected: float | None = None
            basis = "unknown before the runs"
            if table is not None:
                expected = shortest_decode_s(table, strategy, tokens)
                basis = ("cost profile" if not strategy.family.takes_k
                         else "cost profile, every proposal kept (the fewest passes)")
            elif not strategy.family.takes_k and plain_decode_s and prompt in plain_decode_s:
                expected, basis = plain_decode_s[prompt], "plain reference decode"
            passes = (passes_for(expected, size.min_s, max_passes) if expected is not None
                      else None)
            if size.min_s is None:
                passes = 1
            out.append(PlannedWindow(prompt, name, expected, basis, passes))
    return out


def table_lines(size: WindowSize, planned: Sequence[PlannedWindow]) -> list[str]:
    """The window plan for the terminal: the window, then passes per condition."""
    if size.min_s is None:
        return [f"energy windows: one pass per run ({size.reason})"]
    lines = [f"energy windows >= {size.min_s:.3g} s: {size.reason}",
             f"{'prompt':<12} {'strategy':<10} {'decode s':>9} {'passes':>6} {'window s':>9}"]
    for row in planned:
        decode = f"{row.expected_decode_s:.3f}" if row.expected_decode_s is not None else "?"
        passes = str(row.passes) if row.passes is not None else "as run"
        window = f"{row.window_s:.2f}" if row.window_s is not None else "-"
        lines.append(f"{row.prompt:<12} {row.strategy:<10} {decode:>9} {passes:>6} {window:>9}")
    lines.append("passes: back-to-back decodes in one energy window, repeated until it is long "
                 "enough (speculative: the most expected, if every proposal is kept)")
    return lines

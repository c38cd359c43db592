"""How long a campaign's runs will take, said before they start.

The estimate is made once the plain references and the cost profile are measured, from the
same expected decode times the energy windows are sized with (phase.campaign.windows): each
run at plain decoding's expected speed for its prompt, times the passes its window needs,
plus the cooldown and idle window every run waits. Speculative strategies may run faster or
slower than plain (bench/results/hog-campaigns-2026-12-05: estimated at about 3 min, the 24
runs of plain, ngram, draft-4 and auto on a 2-core CPU took 307 s, draft-4 at 0.6x plain): the
line says its basis, and what adaptive rounds and re-runs of disturbed runs may add on top.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from phase.campaign.windows import PlannedWindow
from phase.policy.strategies import is_baseline
from phase.results import CampaignConfig
from phase.results.schedule import ScheduledRun


@dataclass(frozen=True)
class Duration:
    runs: int
    estimated_s: float | None  # None: no plain decode time known for some run's prompt
    per_run_wait_s: float
    extra_budget_s: float | None  # adaptive rounds' time budget (None: none or unlimited)
    extra_budget_runs: int | None
    max_reruns: int

    def line(self) -> str:
        if self.estimated_s is None:
            head = f"time: {self.runs} runs; no plain decode time to estimate them from"
        else:
            head = (f"time: about {_minutes(self.estimated_s)} for {self.runs} runs if each "
                    f"decodes at plain decoding's expected speed for its prompt (with its "
                    f"passes, and {self.per_run_wait_s:g} s of cooldown and idle window per "
                    "run); a strategy slower than plain takes longer, and the progress bar's "
                    "ETA follows the runs")
        extra = []
        if self.extra_budget_runs is not None or self.extra_budget_s is not None:
            limits = []
            if self.extra_budget_runs is not None:
                limits.append(f"{self.extra_budget_runs} runs")
            if self.extra_budget_s is not None:
                limits.append(_minutes(self.extra_budget_s))
            extra.append(f"adaptive rounds at most {' and '.join(limits)} more")
        if self.max_reruns:
            extra.append(f"each disturbed run re-run up to {self.max_reruns} time(s)")
        return head + (f"; {', '.join(extra)}" if extra else "")


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def _serving_window(plain: dict[str, PlannedWindow], pool: str,
                    requests: int) -> dict[str, PlannedWindow]:
    """A serving run as its requests decoded one after another at plain speed (the mean of
    the prompts' plain decodes; batching may serve them sooner, prefill adds to it)."""
    times = [w.expected_decode_s for w in plain.values()]
    if not times or any(t is None for t in times):
        return {}
    mean = sum(t for t in times if t is not None) / len(times)
    return {pool: PlannedWindow(pool, "plain", mean * requests, "serving", 1)}


def estimate(runs: Sequence[ScheduledRun], planned: Sequence[PlannedWindow],
             config: CampaignConfig, done: Set[str] = frozenset()) -> Duration:
    """The expected time of the runs not `done` (run ids; a resumed campaign's), from the
    planned windows of their prompts' plain decodes."""
    runs = [r for r in runs if r.run_id not in done]
    plain = {w.prompt: w for w in planned if is_baseline(w.strategy)}
    wait = config.cooldown_s + config.idle_window_s
    if config.serving is not None:
        plain = _serving_window(plain, config.serving.pool, config.serving.requests)
    total: float | None = 0.0
    for run in runs:
        window = plain.get(run.prompt)
        if total is None or window is None or window.expected_decode_s is None:
            total = None
            continue
        total += window.expected_decode_s * (window.passes or 1) + wait
    adaptive = config.target_half_width is not None
    return Duration(len(runs), total, wait,
                    config.extra_budget_s if adaptive else None,
                    config.extra_budget_runs if adaptive else None,
                    config.max_reruns or 0)

"""What a campaign's runs took against the time it stated before them
(ResultsFile.stated_duration, phase.campaign.duration).

The runs' time is the span from the first run started after the statement to the last run's
end: the waits between runs, prefill and the passes of each window included, model loads and
the cost profile not (they come before the statement). It is held against the stated time
plus what the plan let adaptive rounds add (their time limit; with a limit in runs only, that
many runs at the statement's mean time per run; no limit: nothing to hold it against). A
re-run of a disturbed run was stated as a count, not a time, so the re-runs' own time (start
to end) is left out of the span held against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.results import ResultsFile, StatedDuration


@dataclass(frozen=True)
class Took:
    actual_s: float
    stated_s: float
    # What adaptive rounds were allowed on top (0: none; None: unlimited).
    extra_s: float | None
    rerun_s: float
    reruns: int

    @property
    def allowed_s(self) -> float | None:
        return None if self.extra_s is None else self.stated_s + self.extra_s

    @property
    def over_s(self) -> float | None:
        """How far the runs (re-runs left out) ran past the stated time and budgets; None
        where the budget has no limit."""
        allowed = self.allowed_s
        return None if allowed is None else self.actual_s - self.rerun_s - allowed

    def line(self) -> str:
        text = f"took {_duration(self.actual_s)} of the stated {_duration(self.stated_s)}"
        if self.extra_s is None:
            text += " (adaptive rounds without a time limit)"
        elif self.extra_s > 0:
            text += f" and {_duration(self.extra_s)} adaptive rounds may add"
        if self.reruns:
            text += f"; {self.reruns} re-run(s) of disturbed runs took {_duration(self.rerun_s)}"
        over = self.over_s
        if over is not None and over > 0:
            text += f"; over by {_duration(over)}"
        return text


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def took(results: ResultsFile) -> Took | None:
    """The runs after the statement against it; None without a statement, an estimate, or
    runs after it."""
    stated = results.stated_duration
    if stated is None or stated.estimated_s is None:
        return None
    runs = [r for r in results.runs if r.started_unix_s >= stated.stated_unix_s]
    if not runs:
        return None
    actual = max(r.ended_unix_s for r in runs) - min(r.started_unix_s for r in runs)
    reruns = [r for r in runs if r.rerun_of is not None]
    adaptive = results.config.target_half_width is not None
    return Took(actual, stated.estimated_s, _extra_s(stated, adaptive),
                sum(r.ended_unix_s - r.started_unix_s for r in reruns), len(reruns))


def _extra_s(stated: StatedDuration, adaptive: bool) -> float | None:
    if not adaptive:
        return 0.0
    if stated.extra_budget_s is not None:
        return stated.extra_budget_s
    if stated.extra_budget_runs is not None and stated.runs and stated.estimated_s is not None:
        return stated.estimated_s / stated.runs * stated.extra_budget_runs
    return None

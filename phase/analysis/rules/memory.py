"""Is decode memory-bound? Four tests of a memory study's conditions, each against a threshold
the experiment file declares (experiments/memory_bound.py), each "yes", "no" or "not
resolved", combined by `combine` ("partly" where they disagree):

    share    the median condition's share of the measured bandwidth at its own thread count
             (order-statistic 95% interval over the conditions): memory-bound needs at least
             `share`
    slope    per thread count and context fill, the log-log slope of tokens/s on bytes per
             token across the formats (scipy.stats.linregress, t interval): memory-bound
             predicts -1, within `slope_band`
    threads  from the fewest threads to the next level, each format's and fill's speed gain
             over the measured bandwidth's gain (median, order-statistic interval): memory-bound
             predicts 1 (speed follows bandwidth), within `threads_band`
    fill     from an empty context to the filled one, each format's and thread count's
             tokens/s ratio times its bytes-per-token ratio (median, order-statistic interval):
             memory-bound predicts 1 (speed falls as bytes rise), within `fill_band`

A test is "yes" where its interval lies inside what memory-bound predicts, "no" where it lies
wholly outside, else "not resolved" (also where the campaign lacks what it needs: no measured
bandwidth, one thread count, one fill, too few formats).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phase.analysis.figures import memory_value
from phase.analysis.formatting import pct, times
from phase.analysis.memory import MemoryView, memory_views
from phase.analysis.rules.outcome import (
    COMBINED,
    UNRESOLVED,
    Estimate,
    Judgement,
    Part,
    Verdict,
    combine,
    median_estimate,
    slope_estimate,
)
from phase.policy.strategies import is_baseline
from phase.results import ResultsFile, SummaryRow

VERDICT_WORDS = {"yes": "is memory-bound", "no": "is not memory-bound",
                 "partly": "is partly memory-bound", "not resolved": "is not resolved"}


def _share(v: MemoryView) -> float | None:
    return memory_value("bandwidth_share", v)


def _mb(v: MemoryView) -> float | None:
    return memory_value("mb_per_token", v)


def _tps(v: MemoryView) -> float | None:
    return v.row.tokens_per_s


def _two(value: float | None) -> str:
    return f"{value:.2f}"


def _interval(e: Estimate, show: Callable[[float | None], str] = _two) -> str:
    if e.low is None or e.high is None:
        return f"no 95% interval from {e.n} value(s)"
    return f"95% interval {show(e.low)} to {show(e.high)}, {e.n} values"


def _where(threads: int, fill: int) -> str:
    return f"{threads} thread(s), fill {fill}"


@dataclass(frozen=True)
class MemoryBound:
    """The rule; its thresholds are set in the experiment file."""

    share: float  # memory-bound: the median condition reaches at least this share
    slope_band: float  # memory-bound: the log-log slope within -1 ± this
    threads_band: float  # memory-bound: speed gain / bandwidth gain within 1 ± this
    fill_band: float  # memory-bound: tokens/s ratio × bytes ratio within 1 ± this

    def __call__(self, results: ResultsFile, rows: Sequence[SummaryRow]) -> Judgement:
        views = memory_views(results, [r for r in rows if is_baseline(r.strategy)])
        parts = (self.share_part(views), self.slope_part(views), self.threads_part(views),
                 self.fill_part(views))
        verdict = combine([p.verdict for p in parts])
        said = "; ".join(f"{p.name} {p.verdict}" for p in parts)
        summary = (f"Decode {VERDICT_WORDS[verdict]} by this note's rule "
                   f"({sum(p.verdict == 'yes' for p in parts)} of {len(parts)} tests say memory "
                   f"binds: {said}).") if verdict != UNRESOLVED else (
                   f"Whether decode is memory-bound is not resolved by this note's rule ({said}).")
        rule = (f"{len(parts)} tests, each decided only where its 95% interval lies wholly "
                "inside or outside what memory-bound predicts, else not resolved: "
                + "; ".join(f"{p.name}: {p.test}" for p in parts)
                + f"; {COMBINED}.")
        return Judgement(verdict, parts, summary, rule)

    def share_part(self, views: Sequence[MemoryView]) -> Part:
        test = (f"the median condition reaches at least {pct(self.share)} of the measured "
                "bandwidth at its thread count")
        known = [v for v in views if _share(v) is not None]
        found = median_estimate([_share(v) or 0.0 for v in known])
        if found is None:
            return Part("share of bandwidth", test, UNRESOLVED,
                        "Share of measured bandwidth: not resolved, no condition has a measured "
                        "bandwidth at its thread count.")
        best = max(known, key=lambda v: _share(v) or 0.0)
        verdict = found.at_least(self.share)
        return Part("share of bandwidth", test, verdict, (
            f"Share of measured bandwidth: the median condition reached {pct(found.value)} of "
            f"the measured bandwidth at its thread count ({_interval(found, pct)}); the largest "
            f"share was {pct(_share(best))}, by {best.label} at {_where(best.threads, best.fill)}."
            f" Memory-bound needs at least {pct(self.share)}: {verdict}."))

    def slope_part(self, views: Sequence[MemoryView]) -> Part:
        band = (-1 - self.slope_band, -1 + self.slope_band)
        test = (f"per thread count and fill, the log-log slope of tokens/s on bytes per token "
                f"across formats lies within -1 ± {self.slope_band:.2f}")
        groups: dict[tuple[int, int], list[MemoryView]] = {}
        for v in views:
            if (_mb(v) or 0) > 0 and (_tps(v) or 0) > 0:
                groups.setdefault((v.threads, v.fill), []).append(v)
        verdicts: list[Verdict] = []
        said = []
        for (threads, fill), level in sorted(groups.items()):
            found = slope_estimate([math.log(_mb(v) or 1.0) for v in level],
                                   [math.log(_tps(v) or 1.0) for v in level])
            if found is None:
                continue
            verdict = found.against_band(*band)
            verdicts.append(verdict)
            said.append(f"at {_where(threads, fill)}, {found.value:.2f} "
                        f"({_interval(found)}): {verdict}")
        if not said:
            return Part("bytes-per-token slope", test, UNRESOLVED,
                        "Tokens/s against bytes per token: not resolved, no thread count and "
                        "fill has two formats that read different bytes.")
        verdict = combine(verdicts)
        return Part("bytes-per-token slope", test, verdict, (
            "Tokens/s against bytes per token across the formats, log-log slope (memory-bound: "
            f"-1 ± {self.slope_band:.2f}): " + "; ".join(said) + f". Together: {verdict}."))

    def threads_part(self, views: Sequence[MemoryView]) -> Part:
        test = (f"from the fewest threads to the next level, speed gain over measured "
                f"bandwidth gain lies within 1 ± {self.threads_band:.2f}")
        levels = sorted({v.threads for v in views})
        if len(levels) < 2:
            return Part("threads", test, UNRESOLVED,
                        "Threads: not resolved, the campaign ran one thread count.")
        low, high = levels[0], levels[1]
        by = {(v.label, v.fill, v.threads): v for v in views}
        gains, bw_gain = [], None
        for (label, fill, threads), v in by.items():
            other = by.get((label, fill, high))
            if threads != low or other is None or not _tps(v) or not _tps(other):
                continue
            if v.bandwidth is None or other.bandwidth is None:
                continue
            bw_gain = other.bandwidth.best_gb_s / v.bandwidth.best_gb_s
            gains.append((_tps(other) or 0.0) / (_tps(v) or 1.0))
        found = median_estimate([g / bw_gain for g in gains]) if bw_gain else None
        if found is None or bw_gain is None:
            return Part("threads", test, UNRESOLVED,
                        f"Threads: not resolved, no condition ran at both {low} and {high} "
                        "threads with a measured bandwidth at each.")
        verdict = found.against_band(1 - self.threads_band, 1 + self.threads_band)
        return Part("threads", test, verdict, (
            f"Threads: from {low} to {high} threads the median condition ran "
            f"{times(statistics.median(gains))} as fast, while the measured bandwidth rose "
            f"{times(bw_gain)}; speed gain over bandwidth gain, median {found.value:.2f} "
            f"({_interval(found)}; memory-bound: 1 ± {self.threads_band:.2f}): {verdict}."))

    def fill_part(self, views: Sequence[MemoryView]) -> Part:
        test = (f"from an empty context to the filled one, tokens/s ratio times bytes-per-token"
                f" ratio lies within 1 ± {self.fill_band:.2f}")
        fills = sorted({v.fill for v in views})
        if len(fills) < 2:
            return Part("context fill", test, UNRESOLVED,
                        "Context fill: not resolved, the campaign ran one context fill.")
        empty, full = fills[0], fills[-1]
        by = {(v.label, v.threads, v.fill): v for v in views}
        speed, nbytes = [], []
        for (label, threads, fill), v in by.items():
            other = by.get((label, threads, full))
            if fill != empty or other is None:
                continue
            if not (_tps(v) and _tps(other) and _mb(v) and _mb(other)):
                continue
            speed.append((_tps(other) or 0.0) / (_tps(v) or 1.0))
            nbytes.append((_mb(other) or 0.0) / (_mb(v) or 1.0))
        found = median_estimate([s * b for s, b in zip(speed, nbytes, strict=True)])
        if found is None:
            return Part("context fill", test, UNRESOLVED,
                        f"Context fill: not resolved, no condition ran at both fills {empty} "
                        f"and {full} with its bytes per token known.")
        verdict = found.against_band(1 - self.fill_band, 1 + self.fill_band)
        more = statistics.median(nbytes)
        return Part("context fill", test, verdict, (
            f"Context fill: a fill of {full} instead of {empty} made a token read "
            f"{pct(more - 1)} more bytes and ran at {times(statistics.median(speed))} the "
            f"tokens/s (medians over conditions), where memory-bound predicts "
            f"{times(1 / more)}; measured over predicted, median {found.value:.2f} "
            f"({_interval(found)}; memory-bound: 1 ± {self.fill_band:.2f}): {verdict}."))

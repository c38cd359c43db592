"""Figures typed into a note's prose and front matter, computed from data at build time.

    {{ value("code", "draft-4", "tokens_per_s") }}           one condition's figure
    {{ value("edit", "ngram", "speed_vs_plain", interval=True) }}  with its 95% interval
    {% if resolved("code", "auto", "speed_vs_plain") %}      a ratio's interval excludes 1.0
    {{ interval("code", "auto", "speed_vs_plain") }}         the interval alone: "0.98–1.03"
    {% if direction(["code"], ["draft-4"], "speed_vs_plain") == "below" %}  all resolved < 1
    {{ value_range("speed_vs_plain") }}                      "0.23 to 0.82" over conditions
    {{ value_range("cpu_vs_plain").high }}                   one end of a range
    {{ step("propose_ms_per_drafted") }}                     a median from the per-step trace
    {{ bench("2026-11-30-vm.json", "plain tg128", "reference", vs="llama-bench") }}
    {{ model_size("draft") }}                                a model file's size from provenance
    {{ baseline_caveats() }}                                 the unstable-baseline paragraph
    {{ confirmation() }}                                     the headline's confirmation

Each renders as a span whose title says what it is: the median of n runs, their range and
its 95% interval (phase.analysis.intervals.words), or the median of how many steps. A note
states a ratio to plain decoding as a finding only where `resolved()` says its interval
excludes 1.0 and its test survives the campaign's multiplicity correction. A "vs plain"
ratio on a prompt whose plain baseline was unstable carries a visible mark linking to the
paragraph that says so (appended to the page when the note does not place it).
tests/test_note_figures.py fails when a note types a measured figure outside these calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from markupsafe import Markup

from phase.analysis import FIGURES, PLAIN, Condition, Figure, condition_key, row_value
from phase.analysis.counts import rate_with_counts, row_acceptance_counts
from phase.analysis.figures import STATISTICS, row_interval
from phase.analysis.formatting import span
from phase.analysis.intervals import resolved
from phase.analysis.intervals import words as interval_words
from phase.base.escaping import markdown_safe, safe_url
from phase.publish.data.datasets import Dataset
from phase.publish.notes.source import NoteError
from phase.publish.numbers.bench import BenchResults
from phase.publish.numbers.bench import figure as bench_figure
from phase.publish.numbers.confirmed import confirmed
from phase.publish.numbers.spreads import (
    ConditionSpread,
    baseline_caveat,
    condition_spreads,
    unstable_baselines,
)
from phase.publish.numbers.steps import pooled_median
from phase.results import SummaryRow

CAVEAT_ID = "unstable-baselines"
WHERE = re.compile(r"(?P<metric>[a-z_]+)\s*(?P<op>[<>])\s*(?P<bound>-?[0-9.]+)")
MARK = "†"
# The figures value() and value_range() cite (and a where= filter compares), by registry name.
METRICS = ("tokens_per_s", "speed_vs_plain", "acceptance", "chip_mj_per_token",
           "energy_ratio_vs_plain", "board_mj_per_token", "cpu_ms_per_token", "cpu_vs_plain",
           "tokens_per_s_spread", "chip_energy_spread")


@dataclass(frozen=True)
class Range:
    """Lowest to highest of one figure over several conditions; str() is "low to high"."""

    low: Markup
    high: Markup

    def __str__(self) -> str:
        return str(self.low + Markup(" to ") + self.high)

    def __html__(self) -> str:
        return str(self)


@dataclass
class Figures:
    """The figure helpers of one rendered page (one version of one note)."""

    where: str  # the note source, for error messages
    datasets: list[Dataset]
    bench: list[BenchResults]
    root: str  # the page's way back to the site root
    caveat_href: str = f"#{CAVEAT_ID}"  # where the unstable-baseline paragraph is
    marked: dict[str, str] = field(default_factory=dict)  # prompt -> caveat, marks rendered
    caveats_placed: bool = False
    # Every campaign's confirmation campaign, by the campaign's file name (the build's).
    confirmations: Mapping[str, Dataset] = field(default_factory=dict)
    _spreads: dict[str, dict[Condition, ConditionSpread]] = field(default_factory=dict)

    def _pick(self, file: str | None) -> list[Dataset]:
        picked = [d for d in self.datasets if file is None or d.name == file]
        if not picked:
            raise NoteError(f"{self.where}: no results file {file} in this version")
        return picked

    def _metric(self, metric: str) -> Figure:
        if metric not in METRICS:
            raise NoteError(f"{self.where}: unknown metric {metric!r}; known: "
                            f"{', '.join(METRICS)}")
        return FIGURES[metric]

    def _spread(self, ds: Dataset, row: SummaryRow) -> ConditionSpread:
        if ds.name not in self._spreads:
            self._spreads[ds.name] = condition_spreads(ds)
        return self._spreads[ds.name][condition_key(row)]

    def _title(self, ds: Dataset, row: SummaryRow, fig: Figure) -> str:
        """What a figure is: the median of how many runs, their range, spread and interval."""
        where = f"{row.prompt} × {row.strategy}, {ds.name}"
        spread = self._spread(ds, row).figures.get(fig.name) if fig.per_run else None
        found = row_interval(fig.name, row)
        ci = (f", {interval_words(found.method, found.paired, found.n)} "
              f"{span(found.low, found.high, fig.show)}" if found is not None else "")
        if spread is None:
            n = "n not given" if row.n is None else f"n = {row.n}"
            extra = "; per-run spread not published" if ds.raw is None else ""
            what = "mean of runs" if ds.summary_only else STATISTICS.get(fig.name, "median")
            return f"{fig.name} of {where}: {what} ({n}){ci}{extra}"
        rel = spread.relative
        what = STATISTICS.get(fig.name, "median of runs")
        return (f"{fig.name} of {where}: {what}, {spread.n} runs, lowest "
                f"{fig.show(spread.low)}, highest {fig.show(spread.high)}"
                + (f", spread {FIGURES['spread'].show(rel)}" if rel is not None else "") + ci)

    def _text(self, fig: Figure, value: float | None, ds: Dataset, row: SummaryRow) -> str:
        """A figure as prose writes it; a rate with the counts it rests on, "51% (412/812)"."""
        if fig.name == "acceptance":
            return rate_with_counts(value, row_acceptance_counts(ds.raw, row), fig.show)
        return fig.show(value)

    def _mark(self, ds: Dataset, prompt: str, metric: str) -> Markup:
        if FIGURES[metric].ratio_of is None:  # only a ratio to plain inherits its doubt
            return Markup("")
        message = unstable_baselines(ds).get(prompt)
        if message is None:
            return Markup("")
        caveat = baseline_caveat(prompt, message)
        self.marked[prompt] = caveat
        return Markup(f'<a class="phase-unstable-mark" href="{safe_url(self.caveat_href)}" '
                      f'title="{markdown_safe(caveat)}">{MARK}</a>')

    def _span(self, text: str, title: str, mark: Markup | None = None) -> Markup:
        # Inline HTML in Markdown: the text between the tags is parsed as Markdown.
        return Markup(f'<span class="phase-figure" title="{markdown_safe(title)}">'
                      f"{markdown_safe(text)}</span>") + (mark or Markup(""))

    def _none_yet(self) -> Markup | None:
        """A version that lists no results file yet (a draft) shows a dash, not an error."""
        if self.datasets:
            return None
        return self._span("—", "no results file yet: this figure is computed once there is one")

    def _row(self, call: str, prompt: str, strategy: str, file: str | None
             ) -> tuple[Dataset, SummaryRow]:
        for ds in self._pick(file):
            for row in ds.summary.rows:
                if row.prompt == prompt and row.strategy == strategy:
                    return ds, row
        raise NoteError(f"{self.where}: {call}(): no row {prompt} × {strategy}")

    def value(self, prompt: str, strategy: str, metric: str, file: str | None = None,
              interval: bool = False) -> Markup:
        """One condition's figure; `interval=True` adds its 95% interval
        ("1.62 (95% interval 1.59–1.64)") where it has one."""
        fig = self._metric(metric)
        if (dash := self._none_yet()) is not None:
            return dash
        ds, row = self._row("value", prompt, strategy, file)
        text = self._text(fig, row_value(fig.name, ds.summary.rows, row), ds, row)
        found = row_interval(fig.name, row)
        if interval and found is not None:
            text += f" (95% interval {span(found.low, found.high, fig.show)})"
        return self._span(text, self._title(ds, row, fig), self._mark(ds, prompt, metric))

    def interval(self, prompt: str, strategy: str, metric: str,
                 file: str | None = None) -> Markup:
        """A condition figure's 95% interval alone ("0.98–1.03"); a dash where it has none
        (a median of fewer than 6 runs, one run, a transcribed summary)."""
        fig = self._metric(metric)
        if (dash := self._none_yet()) is not None:
            return dash
        ds, row = self._row("interval", prompt, strategy, file)
        found = row_interval(fig.name, row)
        text = span(found.low, found.high, fig.show) if found is not None else "—"
        return self._span(text, self._title(ds, row, fig), self._mark(ds, prompt, metric))

    def resolved(self, prompt: str, strategy: str, metric: str,
                 file: str | None = None) -> bool:
        """Whether a ratio to plain decoding is resolved: its 95% interval excludes 1.0 and
        its test survives the campaign's multiplicity correction (a note states it as a
        finding only then). False without an interval."""
        fig = self._metric(metric)
        if fig.ratio_of is None:
            raise NoteError(f"{self.where}: resolved(): {metric} is not a ratio to plain")
        if self._none_yet() is not None:
            return False
        _, row = self._row("resolved", prompt, strategy, file)
        return resolved(row_interval(fig.name, row))

    def confirmation(self, file: str | None = None) -> Markup:
        """Per campaign of this version (or the one named `file`): the condition its selection
        rule chose as the best, and what a confirmation campaign measured of it on fresh runs
        ("Confirmed", "Not confirmed"), or that none has ("Unconfirmed")."""
        sentences = []
        for ds in self._pick(file):
            if ds.raw_header is None:  # a transcribed summary: nothing chosen, nothing to run
                continue
            found = confirmed(ds, self.confirmations.get(ds.name))
            if found is not None:
                sentences.append(found.sentence())
        return Markup(markdown_safe(" ".join(sentences)))

    def direction(self, prompts: list[str], strategies: list[str], metric: str,
                  file: str | None = None) -> str:
        """Where the chosen conditions' ratios to plain stand, together: "above" or "below"
        when every one is resolved on that side of 1.0, "mixed" when some are resolved on each
        side, else "not resolved" (some or all undecided). A sentence that says "never" or
        "always" is gated on it, so the text claims no more than the corrected tests."""
        fig = self._metric(metric)
        if fig.ratio_of is None:
            raise NoteError(f"{self.where}: direction(): {metric} is not a ratio to plain")
        if self._none_yet() is not None:
            return "not resolved"
        sides: list[str] = []
        for prompt in prompts:
            for strategy in strategies:
                ds, row = self._row("direction", prompt, strategy, file)
                v = row_value(fig.name, ds.summary.rows, row)
                if v is None or not resolved(row_interval(fig.name, row)):
                    sides.append("not resolved")
                else:
                    sides.append("above" if v > 1.0 else "below")
        if "above" in sides and "below" in sides:
            return "mixed"
        if len(set(sides)) == 1:
            return sides[0]
        return "not resolved"

    def _where(self, where: str | None) -> Callable[[list[SummaryRow], SummaryRow], bool]:
        """A condition filter written as "metric < number" or "metric > number"."""
        if where is None:
            return lambda rows, row: True
        match = WHERE.fullmatch(where.strip())
        if match is None:
            raise NoteError(f"{self.where}: where={where!r}: write it as 'metric < number' or "
                            "'metric > number'")
        name = self._metric(match["metric"]).name
        bound = float(match["bound"])
        below = match["op"] == "<"

        def keep(rows: list[SummaryRow], row: SummaryRow) -> bool:
            v = row_value(name, rows, row)
            return v is not None and (v < bound if below else v > bound)
        return keep

    def value_range(self, metric: str, strategies: list[str] | None = None,
                    prompts: list[str] | None = None, file: str | None = None,
                    where: str | None = None) -> Range:
        """Lowest and highest over the chosen conditions (default: every speculative one),
        optionally only those where another figure is below or above a bound."""
        fig = self._metric(metric)
        keep = self._where(where)
        if (dash := self._none_yet()) is not None:
            return Range(dash, dash)
        found: list[tuple[float, Dataset, SummaryRow]] = []
        for ds in self._pick(file):
            rows = ds.summary.rows
            for row in rows:
                chosen = (row.strategy in strategies if strategies is not None
                          else row.strategy != PLAIN)
                if chosen and (prompts is None or row.prompt in prompts) and keep(rows, row):
                    v = row_value(fig.name, rows, row)
                    if v is not None:
                        found.append((v, ds, row))
        if not found:
            raise NoteError(f"{self.where}: value_range(): no condition has {metric}")
        found.sort(key=lambda t: t[0])
        ends = []
        for v, ds, row in (found[0], found[-1]):
            title = (f"{'lowest' if (v, ds, row) == found[0] else 'highest'} of {len(found)} "
                     f"conditions{f' where {where}' if where else ''}; "
                     + self._title(ds, row, fig))
            ends.append(self._span(self._text(fig, v, ds, row), title,
                                   self._mark(ds, row.prompt, metric)))
        return Range(ends[0], ends[1])

    def step(self, figure: str, strategies: list[str] | None = None,
             prompt: str | None = None, file: str | None = None) -> Markup:
        """A median over steps of the per-step trace (see steps.pooled_median)."""
        if (dash := self._none_yet()) is not None:
            return dash
        raws = [d for d in self._pick(file) if d.raw is not None]
        if not raws:
            raise NoteError(f"{self.where}: step(): no raw results file with a per-step trace")
        ds = raws[0]
        assert ds.raw is not None
        try:
            median, count = pooled_median(ds.raw, figure, strategies, prompt)
        except ValueError as exc:
            raise NoteError(f"{self.where}: step(): {exc}") from None
        if median is None:
            raise NoteError(f"{self.where}: step(): no step has {figure}")
        title = (f"{figure}: median over {count} steps"
                 + (f" of {', '.join(strategies)}" if strategies else "")
                 + (f" on {prompt}" if prompt else "") + f", {ds.name}")
        return self._span(FIGURES[figure].show(median), title)

    def bench_value(self, file: str, item: str, side: str = "phase",
                    vs: str | None = None) -> Markup:
        found = next((b for b in self.bench if b.name == file), None)
        if found is None:
            known = ", ".join(b.name for b in self.bench) or "none"
            raise NoteError(f"{self.where}: bench(): no benchmark results {file}; known: {known}")
        try:
            return bench_figure(found, item, side, vs, f"{self.root}bench/index.html")
        except Exception as exc:  # the bench module's message names the file and the row
            raise NoteError(f"{self.where}: bench(): {exc}") from None

    def model_size(self, role: str, file: str | None = None) -> Markup:
        for ds in self._pick(file):
            raw = ds.raw
            for m in raw.models if raw is not None else []:
                if m.role == role:
                    return self._span(f"{m.size_bytes / 1e6:,.0f}",
                                      f"{m.name}: {m.size_bytes:,} bytes, sha256 {m.sha256}")
        raise NoteError(f"{self.where}: model_size(): no {role} model recorded")

    def baseline_caveats(self, file: str | None = None) -> Markup:
        """The paragraph every unstable-baseline mark links to ("" when no baseline was)."""
        self.caveats_placed = True
        lines = []
        for ds in self._pick(file):
            for prompt, message in unstable_baselines(ds).items():
                lines.append(f"{prompt}: {message}")
        if not lines:
            return Markup("")
        return (
            Markup(f'<p class="phase-caveat" id="{CAVEAT_ID}">{MARK} <strong>Unstable '
                   "baseline.</strong> Plain decoding, the baseline of every ratio to plain, was "
                   "itself unstable on ")
            + markdown_safe("; ".join(lines))
            + Markup(". A ratio to plain on those prompts is uncertain by at least as much, and "
                     f"is marked {MARK} wherever it appears.</p>"))

    def leftover_caveats(self) -> Markup:
        """Appended to a page whose figures carry marks but whose note placed no paragraph."""
        if not self.marked or self.caveats_placed:
            return Markup("")
        return Markup("\n\n") + self.baseline_caveats() + Markup("\n\n")

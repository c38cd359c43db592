"""A serving study on a note's page (a campaign with a `concurrency` factor): template calls.

    {{ crossover_findings() }}  the sentences of the experiment's Crossover rule (the one its
                                file declares, else the rule's defaults), a list
    {{ crossover_table() }}     per strategy: where it stops paying in throughput and in energy
                                per request (whole run, steady state), by the rule's reading
    {{ serving_ratios() }}      per strategy and concurrency: its throughput and energy-per-
                                request ratios to plain with their 95% intervals
    {{ auto_table() }}          auto against the better of plain and the best fixed proposer
    {{ latency_table() }}       per strategy and concurrency: TTFT, TPOT, ITL and E2E at
                                p50/p90/p99 (the median over runs of each run's percentile)
    {{ serving_charts() }}      throughput and energy per request against concurrency
    {{ serving_section() }}     all of them under one heading, with the question and the rule

Each takes `file="name.json"`; a file without a concurrency factor gives nothing. A page whose
body calls none of them gets `serving_section()` after its body where a results file has a
concurrency factor (phase.publish.notes.render), so a serving campaign's note needs no template
of its own and every other note is unchanged. Every row links to the runs behind its numbers on
the data page; every text from data is escaped (autoescape, markdown_safe).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup

from phase.analysis.formatting import DASH, span, times
from phase.analysis.rules import Crossover
from phase.analysis.rules.crossover import crossing, crossing_text
from phase.analysis.serving import (
    WINDOWS,
    LevelRatio,
    Series,
    auto_series,
    concurrency_factor,
    energy_series,
    grouped,
    throughput_series,
)
from phase.base.escaping import markdown_safe
from phase.publish.data.datasets import Dataset
from phase.publish.notes.cost_section import CostCalls, CostCell, CostTable, run_links
from phase.publish.numbers.outcomes import question_of
from phase.publish.numbers.rungroups import GroupLinks
from phase.publish.numbers.tables import Link
from phase.results import ResultsFile, Run
from phase.validate.rules.serving_gaps import request_kind
from phase.validate.settings import DEFAULT_SETTINGS

LATENCIES = (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "E2E"))
QUANTILES = ("p50", "p90", "p99")
# What a serving study asks where its experiment declares no question of its own.
QUESTION = ("As more requests are decoded together, does each speculative strategy keep beating "
            "plain decoding's aggregate throughput, and from which concurrency on does it stop?")
RATIO_NOTE = ("Ratios to plain decoding at the same concurrency and repeat: geometric mean of "
              "the per-repeat ratios, Student t 95% interval on their logs, Benjamini-Hochberg "
              "over the figure's ratios; a ratio counts as different from 1.00 only where its "
              "interval excludes it and its corrected test agrees.")


def rule_of(raw: ResultsFile) -> Crossover:
    """The Crossover rule the campaign's experiment declares, else the rule's defaults."""
    question = question_of(raw.experiment)
    rule = question.rule if question is not None else None
    return rule if isinstance(rule, Crossover) else Crossover()


def _ratio_cell(r: LevelRatio | None) -> CostCell:
    if r is None:
        return CostCell(DASH, None, "no such level")
    if r.value is None:
        return CostCell(DASH, None, r.reason or "not measured")
    if r.interval is None:
        return CostCell(f"{times(r.value)} (no interval)", r.value, r.reason)
    return CostCell(f"{times(r.value)} ({span(r.interval.low, r.interval.high, times)})",
                    r.value)


def _ms(value: float | None) -> str:
    return DASH if value is None else f"{value * 1e3:.1f}"


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


class ServingCalls(CostCalls):
    called = False  # whether the page's body called any of these (then nothing is appended)

    def _serving(self, file: str | None) -> list[tuple[Dataset, ResultsFile]]:
        self.called = True
        # The header (the file without its runs) says whether it is a serving campaign, so
        # other notes' files are not loaded for this.
        return [(d, d.raw) for d in self.pick(file) if d.raw_header is not None
                and concurrency_factor(d.raw_header) is not None and d.raw is not None]

    def serving_section(self, file: str | None = None) -> Markup:
        """Everything above under one heading (empty where no file has a concurrency
        factor)."""
        out = Markup("")
        for d, raw in self._serving(file):
            question = question_of(raw.experiment)
            judged = rule_of(raw)(raw, d.summary.rows)
            # The question goes with its rule: a file that declares another rule's question
            # (a placeholder) does not lend its text to this rule's answer.
            asked = (question.text if question is not None
                     and isinstance(question.rule, Crossover) else QUESTION)
            out += Markup("\n\n## Speculation under load\n\n") + markdown_safe(
                f"{asked} Rule: {judged.rule}. Verdict: {judged.verdict}. {judged.summary}")
            out += Markup("\n\n") + markdown_safe(load_text(raw))
            out += Markup("\n\n") + Markup("").join(
                Markup("- ") + markdown_safe(p.sentence) + Markup("\n") for p in judged.parts)
            for call in (self.crossover_table, self.serving_charts, self.serving_ratios,
                         self.auto_table):
                out += Markup("\n") + call(d.name)
            out += Markup("\n\n### Latency per request\n") + self.latency_table(d.name)
            out += Markup("\n\n### Outputs against plain decoding\n\n") + markdown_safe(
                equality_text(raw, d.report.settings.near_tie_gap)) + Markup("\n")
        return out

    def _runs(self, raw: ResultsFile, ids: Sequence[str]) -> list[Run]:
        wanted = set(ids)
        return [r for r in raw.runs if r.id in wanted]

    def crossover_findings(self, file: str | None = None) -> list[str]:
        out: list[str] = []
        for d, raw in self._serving(file):
            out += [p.sentence for p in rule_of(raw)(raw, d.summary.rows).parts]
        return out

    def crossover_table(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._serving(file):
            rows = d.summary.rows
            energy = {w: energy_series(raw, rows, w) for w in WINDOWS}
            cells, sources = [], []
            links = self._groups(raw, self._page(d))
            for s in throughput_series(raw, rows):
                line = [CostCell(s.strategy), CostCell(s.where),
                        CostCell(crossing_text(crossing(s.ratios), "throughput"))]
                for w in WINDOWS:
                    e = _find(energy[w], s)
                    line.append(CostCell(_energy_reading(e)))
                cells.append(line)
                sources.append(links(self._runs(raw, [i for r in s.ratios for i in r.run_ids])))
            parts.append(self._table(CostTable(
                "crossover", "Where each strategy stops paying, by the rule", d.name,
                self._page(d), ["strategy", "requests from", "throughput",
                                "energy per request (whole run)",
                                "energy per request (steady state)"],
                cells, [RATIO_NOTE, "The crossover is the lowest concurrency whose ratio's "
                        "interval includes 1.00 or lies on plain decoding's side of it."],
                sources)))
        return self._block(parts)

    def serving_ratios(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._serving(file):
            rows = d.summary.rows
            energy = {w: energy_series(raw, rows, w) for w in WINDOWS}
            cells, sources = [], []
            page = self._page(d)
            for s in throughput_series(raw, rows):
                for r in s.ratios:
                    line = [CostCell(s.strategy), CostCell(str(r.level), _num(r.level)),
                            _ratio_cell(r)]
                    for w in WINDOWS:
                        e = _find(energy[w], s)
                        line.append(_ratio_cell(_at(e, r.level) if e else None))
                    cells.append(line)
                    sources.append(run_links(page, self._runs(raw, r.run_ids), by_repeat=False))
            parts.append(self._table(CostTable(
                "serving-ratios", "Against plain decoding, per concurrency", d.name, page,
                ["strategy", "concurrency", "aggregate tokens/s over plain (95% interval)",
                 "energy per request over plain, whole run", "energy per request over "
                 "plain, steady state"], cells, [RATIO_NOTE], sources)))
        return self._block(parts)

    def auto_table(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._serving(file):
            rule = rule_of(raw)
            cells, sources = [], []
            page = self._page(d)
            groups = GroupLinks(raw, page)
            for where, levels in auto_series(raw, d.summary.rows):
                for a in levels:
                    floor = rule.floor(a.ratio)
                    cells.append([CostCell(where), CostCell(str(a.ratio.level),
                                                            _num(a.ratio.level)),
                                  CostCell(a.against), _ratio_cell(a.ratio), CostCell(floor)])
                    sources.append([Link(label, href, "") for label, href in
                                    groups.by_condition(self._runs(raw, a.ratio.run_ids))])
            if cells:
                parts.append(self._table(CostTable(
                    "auto-floor", "auto against the better of plain and the best fixed "
                    "proposer", d.name, page,
                    ["requests from", "concurrency", "compared with",
                     "auto's tokens/s over it (95% interval)",
                     f"at least {times(rule.auto_floor)}"], cells,
                    ["auto's ratio to the better of them is its lowest ratio to any of them "
                     "(paired by repeat), named under \"compared with\". The interval holds "
                     "whichever of them is truly the fastest: its low end is the lowest of "
                     "the Student t 95% lower ends, its high end the lowest of the upper "
                     "ends widened (Bonferroni) over the rivals and the concurrencies."],
                    sources)))
        return self._block(parts)

    def latency_table(self, file: str | None = None) -> Markup:
        # Two tables of two measures each: one of all four (16 columns) is wider than the
        # page's column at 1280 px.
        parts = []
        for d, raw in self._serving(file):
            for kind, measures in (("latency", LATENCIES[:2]), ("latency-2", LATENCIES[2:])):
                parts.append(self._latency_part(d, raw, kind, measures))
        return self._block(parts)

    def _latency_part(self, d: Dataset, raw: ResultsFile, kind: str,
                      measures: Sequence[tuple[str, str]]) -> str:
        factor = concurrency_factor(raw)
        assert factor is not None
        cells, sources = [], []
        page = self._page(d)
        for (where, strategy), levels in grouped(d.summary.rows, factor).items():
            for level, row in levels.items():
                runs = [r for r in self._runs(raw, row.run_ids) if r.serving is not None]
                line = [CostCell(strategy), CostCell(where), CostCell(str(level), _num(level))]
                for name, _ in measures:
                    for q in QUANTILES:
                        v = _median([getattr(getattr(r.serving, name), q) for r in runs])
                        line.append(CostCell(_ms(v), v * 1e3 if v is not None else None,
                                             None if v is not None else "no values"))
                cells.append(line)
                sources.append(run_links(page, runs, by_repeat=True))
        names = " and ".join(label for _, label in measures)
        return self._table(CostTable(
            kind, f"Per-request {names}, per strategy and concurrency (ms)", d.name,
            page, ["strategy", "requests from", "concurrency",
                   *(f"{label} {q}" for _, label in measures for q in QUANTILES)],
            cells, [_LATENCY_NOTE], sources))

    def serving_charts(self, file: str | None = None) -> Markup:
        # Altair loads only where a chart is drawn (a refused build never draws one).
        from phase.publish.charts.serving import (
            energy_per_request_vs_concurrency,
            throughput_vs_concurrency,
        )

        drawn: list[Callable[[Dataset], Any]] = [throughput_vs_concurrency,
                                                  energy_per_request_vs_concurrency]
        return self._block([self.assets.chart(draw(d), d.name)
                            for d, _ in self._serving(file) for draw in drawn])


_LATENCY_NOTE = ("Each figure is the median over the condition's runs of that run's "
                 "percentile over its requests (numpy's linear method): TTFT, time to first "
                 "token from arrival; TPOT, time per output token after the first; ITL, the "
                 "gap before each token (a step's m tokens share its gap); E2E, arrival to "
                 "finish. The links are the runs, by repeat.")


def load_text(raw: ResultsFile) -> str:
    """How each run loaded the decoder (config.serving), in one sentence."""
    serving = raw.config.serving
    assert serving is not None
    if serving.load == "open":
        how = (f"an open loop: requests arrive as a seeded Poisson process at "
               f"{serving.request_rate:g} per second, at most the concurrency level are served "
               "at once and later arrivals wait in a queue (the wait counts in their time to "
               "first token)")
    else:
        how = ("a closed loop: as many clients as the concurrency level, each sending its next "
               "request as soon as its last one ends")
    order = ""
    if raw.config.blocked_by is not None:
        order = (f" Each repeat runs one {raw.config.blocked_by} level's strategies back to "
                 "back, the levels in a shuffled order, so the runs a ratio pairs are minutes "
                 "apart.")
    same = (" Every strategy of a repeat at one level serves the same requests in the same "
            "order, so a ratio compares strategies on one load."
            if serving.order_seed == "load" else "")
    return (f"Each run serves {serving.requests} requests drawn in a seeded order from "
            f"{serving.pool}, decoded together with continuous batching, under {how}.{order}"
            f"{same}")


def equality_text(raw: ResultsFile, near_tie_gap: float = DEFAULT_SETTINGS.near_tie_gap) -> str:
    """How many requests, per strategy and concurrency, produced exactly what plain
    single-request greedy decoding of their prompt produces, and of those that did not, how
    many part from it at a near tie (both passes' top-2 logit gaps below `near_tie_gap`):
    the count the page would otherwise leave to the raw runs, stated with what it cannot
    tell."""
    counts: dict[str, dict[int, list[int]]] = {}
    kinds: Counter[str] = Counter()
    for run in raw.runs:
        if run.serving is None:
            continue
        at = counts.setdefault(run.strategy, {}).setdefault(run.serving.concurrency, [0, 0])
        at[0] += sum(1 for q in run.serving.requests if q.matches_plain)
        at[1] += len(run.serving.requests)
        kinds.update(request_kind(q, near_tie_gap) for q in run.serving.requests)
    if not counts:
        return "No serving run was recorded."
    per = "; ".join(
        f"{strategy} " + ", ".join(f"at {c}: {m} of {n}" for c, (m, n) in sorted(levels.items()))
        for strategy, levels in counts.items())
    equal = sum(m for levels in counts.values() for m, _ in levels.values())
    total = sum(n for levels in counts.values() for _, n in levels.values())
    return (f"Requests whose tokens equal plain single-request greedy decoding of the same "
            f"prompt: {equal} of {total} ({per}). " + _differences(kinds, near_tie_gap))


def _differences(kinds: Counter[str], near_tie_gap: float) -> str:
    """What the differing requests' evidence says (a request differs from one token on)."""
    if kinds["unrecorded"]:
        return (f"{kinds['unrecorded']} differ without the two most likely tokens' logit gaps "
                "recorded at their first differing token (files written before serving runs "
                "recorded them), so this page cannot say which differences are near ties (the "
                "batched and multi-token passes add in another order than one-token plain "
                "steps) and which are not.")
    return (f"Of those that differ, {kinds['near tie']} do so at a near tie (the two most "
            f"likely tokens' logits within {near_tie_gap:g} of each other in both the batched "
            "pass and plain decoding, where the batched and multi-token passes, adding in "
            "another order than one-token plain steps, can pick the other) and "
            f"{kinds['clear margin']} otherwise.")


def _num(level: object) -> float | None:
    return float(level) if isinstance(level, int | float) else None


def _find(series: Sequence[Series], s: Series) -> Series | None:
    return next((x for x in series if x.where == s.where and x.strategy == s.strategy), None)


def _at(s: Series, level: object) -> LevelRatio | None:
    return next((r for r in s.ratios if r.level == level), None)


def _energy_reading(s: Series | None) -> str:
    if s is None:
        return "no plain run to compare with"
    if all(r.value is None for r in s.ratios):
        reasons = sorted({r.reason for r in s.ratios if r.reason})
        return "not measured: " + ("; ".join(reasons) or "no sensor")
    return crossing_text(crossing(s.ratios, lower_is_better=True), "energy per request",
                         "use less than")


def serving_calls(calls: ServingCalls) -> dict[str, Any]:
    """The serving-study functions a note body can call, bound to one page."""
    c = calls
    return {"crossover_findings": c.crossover_findings, "crossover_table": c.crossover_table,
            "serving_ratios": c.serving_ratios, "auto_table": c.auto_table,
            "latency_table": c.latency_table, "serving_charts": c.serving_charts,
            "serving_section": c.serving_section}


def placed(body: Markup, calls: ServingCalls) -> Markup:
    """The body with the serving section where the body did not place it: before its first
    section, the answer ahead of the tables; the body as it is for any other note, so that
    no other page changes."""
    if calls.called or not (serving := calls.serving_section()):
        return body
    at = body.find("\n## ")
    return Markup(body[:at] + serving + body[at:]) if at >= 0 else body + serving

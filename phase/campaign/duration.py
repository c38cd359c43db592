"""How long a campaign's runs will take, said before they start, and kept in the file.

The estimate is made once the plain references and the cost profile are measured. Each run is
priced by its strategy's speed as the cost profile predicts it (phase.costmodel.predict, at
the KV fill the energy windows are planned at: phase.campaign.windows), times the passes its
window needs, plus the cooldown and idle window every run waits. Priced as plain decoding, the
speculative runs were stated far too short (bench/results/hog-campaigns-2026-12-05: estimated
at about 3 min, the 24 runs of plain, ngram, draft-4 and auto on a 2-core CPU took 307 s,
draft-4 at 0.6x plain). What the plan cannot know is how many proposals the target keeps, so
the line states the acceptance it assumes (`ASSUMED_RATE`). Without a profile, every run is
priced at plain decoding's expected speed for its prompt, and the line says so; a serving run
as its requests decoded one after another at plain speed, plus their prompts' prefills. The
statement is recorded in the results file (ResultsFile.stated_duration), where
phase.analysis.duration checks what the runs took against it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence, Set
from contextlib import suppress
from dataclasses import dataclass

from phase.campaign.windows import PlannedWindow, passes_for
from phase.costmodel import CostTable, NoCost, cost_table
from phase.policy.strategies import Strategy, is_baseline
from phase.results import CampaignConfig, CostProfile, StatedDuration
from phase.results.schedule import ScheduledRun

# The chance the target keeps a draft proposal, given it kept the ones before it, that a
# draft-k run is priced at. The plan cannot know it; on the committed x86_64-2c campaigns
# (1.5B target, 0.5B draft) the pooled per-prompt rates were 0.62 (prose) to 0.96 (edit), so
# this slower rate states a time the runs should finish within, not the likeliest one.
ASSUMED_RATE = 0.6

# (prompt, strategy label) -> the expected decode time of one pass, in seconds.
Prices = Mapping[tuple[str, str], float]


@dataclass(frozen=True)
class Duration:
    runs: int
    estimated_s: float | None  # None: no plain decode time known for some run's prompt
    per_run_wait_s: float
    with_prefill: bool  # each run's prompt prefill counted (the plain reference's time)
    extra_budget_s: float | None  # adaptive rounds' time budget (None: none or unlimited)
    extra_budget_runs: int | None
    max_reruns: int
    # Whether every run was priced by its strategy's predicted speed (else at plain's).
    by_strategy: bool = False

    def line(self) -> str:
        if self.estimated_s is None:
            head = f"time: {self.runs} runs; no plain decode time to estimate them from"
        elif self.by_strategy:
            head = (f"time: about {_minutes(self.estimated_s)} for {self.runs} runs if each "
                    "decodes at the speed the cost profile predicts for its strategy and "
                    "prompt: draft-k (and a fixed ngram-K) keeping each proposal at an "
                    f"assumed {ASSUMED_RATE:g} (given the ones before it kept; a lower rate "
                    "takes longer), adaptive ngram and auto as if they proposed nothing (a "
                    "lookup and a one-token pass per token); with its passes, "
                    f"{self._prefill}and {self.per_run_wait_s:g} s of cooldown and idle "
                    "window per run")
        else:
            head = (f"time: about {_minutes(self.estimated_s)} for {self.runs} runs if each "
                    f"decodes at plain decoding's expected speed for its prompt (with its "
                    f"passes, {self._prefill}and {self.per_run_wait_s:g} s of cooldown and "
                    "idle window per run); a strategy slower than plain takes longer, and the "
                    "progress bar's ETA follows the runs")
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

    @property
    def _prefill(self) -> str:
        return "its prompt's prefill as the plain reference took it, " if self.with_prefill else ""

    def record(self, at_unix_s: float | None = None) -> StatedDuration:
        """The statement as the results file keeps it (ResultsFile.stated_duration)."""
        return StatedDuration(
            stated_unix_s=time.time() if at_unix_s is None else at_unix_s, runs=self.runs,
            estimated_s=self.estimated_s, extra_budget_s=self.extra_budget_s,
            extra_budget_runs=self.extra_budget_runs, max_reruns=self.max_reruns,
            statement=self.line())


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


def _serving_prefill(prefill_s: Mapping[str, float], pool: str,
                     requests: int) -> dict[str, float]:
    """A serving run's prefill: its requests' prompts each prefilled once, at the mean of the
    prompts' reference prefills (on a CPU about half of a serving run; without it the
    committed serving campaigns were stated far too short: bench/stated_duration.py)."""
    if not prefill_s:
        return {}
    return {pool: requests * sum(prefill_s.values()) / len(prefill_s)}


def per_token_ms(table: CostTable, strategy: Strategy) -> float:
    """A strategy's predicted time per generated token: plain's one-token pass; a strategy
    proposing k every step (draft-k, ngram-K) by its family's expected step at ASSUMED_RATE;
    one that proposes only where it expects to gain (adaptive ngram, auto) as its steps that
    propose nothing are charged (phase.costmodel.predict: a lookup and c_t(1))."""
    fam = strategy.family
    expected = fam.expected()
    if not fam.takes_k:
        return table.plain()
    if expected is None or fam.decides or strategy.adaptive:
        return table.lookup + table.target(1)
    k = strategy.max_proposal
    return expected(table, [ASSUMED_RATE] * k, k).cost_per_token


def decode_prices(profile: CostProfile | None, prompt_tokens: Mapping[str, int],
                  strategies: Mapping[str, Strategy], tokens: int) -> dict[tuple[str, str],
                                                                           float]:
    """Each prompt x strategy's predicted decode time, in seconds, at the KV fill the windows
    are planned at; none where the profile lacks a cost (no draft profiled)."""
    out: dict[tuple[str, str], float] = {}
    if profile is None:
        return out
    for prompt, length in prompt_tokens.items():
        try:
            table = cost_table(profile, length + tokens // 2)
        except NoCost:
            continue
        for name, strategy in strategies.items():
            with suppress(NoCost):
                out[(prompt, name)] = tokens * per_token_ms(table, strategy) / 1e3
    return out


def _run_s(run: ScheduledRun, plain: dict[str, PlannedWindow], prices: Prices,
           config: CampaignConfig) -> float | None:
    """One run's decode time with its passes, or None where nothing prices it."""
    price = prices.get((run.prompt, run.strategy))
    if price is not None:
        return price * passes_for(price, config.window_min_s, config.max_passes or 1)
    window = plain.get(run.prompt)
    if window is None or window.expected_decode_s is None:
        return None
    return window.expected_decode_s * (window.passes or 1)


def estimate(runs: Sequence[ScheduledRun], planned: Sequence[PlannedWindow],
             config: CampaignConfig, done: Set[str] = frozenset(),
             prices: Prices | None = None,
             prefill_s: Mapping[str, float] | None = None) -> Duration:
    """The expected time of the runs not `done` (run ids; a resumed campaign's): each by its
    strategy's predicted decode (`prices`, from `decode_prices`) where every run has one,
    else by the planned windows of their prompts' plain decodes; each with its prompt's
    prefill (`prefill_s`: the plain reference's, by prompt), once per run."""
    runs = [r for r in runs if r.run_id not in done]
    plain = {w.prompt: w for w in planned if is_baseline(w.strategy)}
    wait = config.cooldown_s + config.idle_window_s
    prices = prices or {}
    prefill_s = prefill_s or {}
    if config.serving is not None:
        plain = _serving_window(plain, config.serving.pool, config.serving.requests)
        prices, prefill_s = {}, _serving_prefill(prefill_s, config.serving.pool,
                                                 config.serving.requests)
    by_strategy = bool(runs) and all((r.prompt, r.strategy) in prices for r in runs)
    if not by_strategy:
        prices = {}
    times = [_run_s(r, plain, prices, config) for r in runs]
    with_prefill = bool(runs) and all(r.prompt in prefill_s for r in runs)
    prefill = sum(prefill_s[r.prompt] for r in runs) if with_prefill else 0.0
    total = (None if any(t is None for t in times)
             else sum(t for t in times if t is not None) + prefill + wait * len(runs))
    adaptive = config.target_half_width is not None
    return Duration(len(runs), total, wait, with_prefill,
                    config.extra_budget_s if adaptive else None,
                    config.extra_budget_runs if adaptive else None,
                    config.max_reruns or 0, by_strategy)

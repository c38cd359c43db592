"""Per-step cost of drafting and verifying, read from each run's trace (`Run.trace`).

A step is one target forward pass: the proposer offered `proposed` tokens (taking `propose_ms`)
and the target scored them plus one token of its own (taking `verify_ms`). From the steps of
every run of a condition:

* propose ms per drafted token: `propose_ms / proposed` over the steps that proposed anything;
* verify ms per step and tokens verified per step (`proposed + 1`);
* plain ms per token: `verify_ms` of a plain run's steps (each step is one target token);
* ms per generated token spent proposing and verifying: a run's summed `propose_ms` and
  `verify_ms` over its generated tokens (mean of runs, with min and max).

Medians over steps (a step's time has a long tail: the first pass, page faults, a busy
neighbour), means over runs. Summary-only files have no trace: `step_costs` returns nothing
and callers say why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis import runs_by_condition
from phase.analysis.relative import spread_of_range
from phase.policy.strategies import is_baseline, needs_draft
from phase.publish.data.datasets import Dataset
from phase.results import ResultsFile, Run

# The figures pooled_median gives (a note's step() calls), by their registry names.
STEP_FIGURES = ("propose_ms_per_drafted", "plain_ms_per_token")
NO_TRACE = "the raw runs of this file are not in this repository, so there is no per-step trace"


@dataclass(frozen=True)
class Spread:
    """A mean of per-run values with its range and count."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def relative(self) -> float | None:
        """The run spread (phase.analysis.relative, about the mean)."""
        return spread_of_range(self.low, self.high, self.mean, self.n)


def spread_of(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(statistics.fmean(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class StepCost:
    """One condition's per-step figures (every run of one prompt with one strategy)."""

    prompt: str
    strategy: str
    k: int | None
    n_runs: int
    n_steps: int
    propose_ms_per_drafted: float | None  # median over proposing steps
    verify_ms_per_step: float | None  # median over proposing steps (a plain step for plain)
    tokens_per_verify: float | None  # median of proposed + 1 over proposing steps
    plain_ms_per_token: float | None  # median verify_ms of a plain run's steps
    propose_ms_per_token: Spread  # per run: sum(propose_ms) / generated tokens
    verify_ms_per_token: Spread  # per run: sum(verify_ms) / generated tokens


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _condition(prompt: str, strategy: str, runs: list[Run]) -> StepCost | None:
    steps = [s for r in runs for s in r.trace]
    if not steps:
        return None
    proposing = [s for s in steps if s.proposed > 0]
    plain = is_baseline(strategy)
    ks = {r.k for r in runs}
    propose = spread_of([sum(s.propose_ms for s in r.trace) / r.tokens for r in runs])
    verify = spread_of([sum(s.verify_ms for s in r.trace) / r.tokens for r in runs])
    assert propose is not None and verify is not None  # runs is never empty here
    return StepCost(
        prompt=prompt,
        strategy=strategy,
        k=ks.pop() if len(ks) == 1 else None,
        n_runs=len(runs),
        n_steps=len(steps),
        propose_ms_per_drafted=_median([s.propose_ms / s.proposed for s in proposing]),
        verify_ms_per_step=_median([s.verify_ms for s in (steps if plain else proposing)]),
        tokens_per_verify=_median([float(s.proposed + 1) for s in proposing]),
        plain_ms_per_token=_median([s.verify_ms for s in steps]) if plain else None,
        propose_ms_per_token=propose,
        verify_ms_per_token=verify,
    )


def step_costs(ds: Dataset) -> list[StepCost]:
    """Per-condition step figures of a raw file, in its conditions' order; [] without a trace."""
    raw = ds.raw
    if raw is None:
        return []
    out = []
    for (prompt, strategy, _levels), runs in runs_by_condition(raw).items():
        cost = _condition(prompt, strategy, runs)
        if cost is not None:
            out.append(cost)
    return out


def pooled_median(raw: ResultsFile, figure: str, strategies: Sequence[str] | None = None,
                  prompt: str | None = None) -> tuple[float | None, int]:
    """One median over the steps of many runs, and how many steps it covers.

    figure: "propose_ms_per_drafted" (draft-k steps that proposed tokens) or
    "plain_ms_per_token" (plain runs' steps). `strategies` narrows the runs (default: every
    draft-k strategy for the first, plain for the second)."""
    def wanted(run: Run) -> bool:
        if prompt is not None and run.prompt != prompt:
            return False
        if strategies is not None:
            return run.strategy in strategies
        if figure == "plain_ms_per_token":
            return is_baseline(run.strategy)
        return needs_draft(run.strategy)

    runs = [r for r in raw.runs if wanted(r)]
    if figure == "propose_ms_per_drafted":
        values = [s.propose_ms / s.proposed for r in runs for s in r.trace if s.proposed > 0]
    elif figure == "plain_ms_per_token":
        values = [s.verify_ms for r in runs for s in r.trace if s.proposed == 0]
    else:
        raise ValueError(f"unknown step figure {figure!r}; known: {', '.join(STEP_FIGURES)}")
    return _median(values), len(values)

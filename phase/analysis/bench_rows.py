"""One row of a benchmark results file (`bench/results/*.json`): what bench/ writes and
the Benchmarks page (phase.publish.numbers.bench) reads back, defined once.

A row is one comparison: phase's figure, the reference figure (native llama.cpp, a hardware
limit, a budget), their ratio and, where the project sets one, a target that the row passes
or fails. Raw samples travel with each row so the file holds every repeat; `noise`, the
largest spread among them, is written beside them, and a verdict under a noise above NOISY is
marked as weak on the terminal, in the Markdown table and on the Benchmarks page alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from phase.analysis.relative import BENCH_SPREAD, spread

NOISY = 0.10  # repeats more than 10% apart: the machine was not quiet enough to judge


def samples_spread(values: Sequence[Any]) -> float | None:
    """A benchmark's spread (phase.analysis.relative, about the median) of the numbers among
    `values`: a repeat that failed, or a flag, is no figure."""
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return spread(nums, BENCH_SPREAD)


@dataclass
class BenchRow:
    """One comparison. `ratio` is phase / reference unless the section says otherwise;
    `passed` is None where no target applies or the comparison could not be made.

    A plain dataclass, so bench writes exactly the numbers it measured (a count stays an
    int); the page reads files through pydantic, which checks these types (BenchFile in
    phase.publish.numbers.bench). Unknown fields in a file are ignored: bench may add some.
    """

    section: str
    item: str
    phase: float | None
    reference: float | None
    reference_name: str
    unit: str
    ratio: float | None = None
    target: str | None = None
    passed: bool | None = None
    detail: str = ""
    samples: dict[str, list[float]] | None = field(default_factory=dict)
    # Per-repeat figures that explain the row without being repeats of its comparison (a
    # prediction's terms in ms): kept in the JSON, left out of `noise`.
    breakdown: dict[str, list[Any]] = field(default_factory=dict)
    # The largest spread among the samples: how far apart repeats of the same thing landed.
    # A row read from a file keeps the figure written there; one built without it has it
    # computed from its samples.
    noise: float | None = None

    def __post_init__(self) -> None:
        if self.noise is None:
            spreads = [samples_spread(v) for v in (self.samples or {}).values()]
            known = [s for s in spreads if s is not None]
            self.noise = max(known) if known else None

    @property
    def n(self) -> int | None:
        """Repeats behind phase's figure (the longest sample list where names differ)."""
        if not self.samples:
            return None
        return max(len(v) for v in self.samples.values())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

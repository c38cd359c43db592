"""What every benchmark section shares: the settings, A/B alternation, medians, result rows.

A section is a function `run(ctx) -> Section`. It measures, then describes what it found as
rows: one row per comparison, with phase's figure, the reference figure (native llama.cpp,
a hardware limit, a budget), their ratio and, where the project sets one, a target that the
row passes or fails (phase.analysis.bench_rows.BenchRow, which the Benchmarks page reads back).
Raw samples travel with each row so the JSON file holds every repeat.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from phase.analysis.bench_rows import BenchRow

REPO = Path(__file__).resolve().parent.parent

T = TypeVar("T")


@dataclass
class Context:
    """Settings shared by all sections (same model, prompt, threads on both sides)."""

    repeats: int
    tokens: int
    # Tokens per run in the auto and ngram-native sections (bench/spec_bench.py).
    spec_tokens: int
    threads: int
    n_ctx: int
    target_name: str
    draft_name: str
    target_path: Path
    draft_path: Path
    ks: tuple[int, ...]
    quick: bool
    native_bin: Path | None  # None when the native binaries could not be built
    native_problem: str | None
    workdir: Path  # a temporary directory, removed after the run
    site_counts: tuple[int, ...]
    sampler_hz: tuple[float, ...]
    chat_template: bool = False
    # Campaign counts for the hosts section (bench/hosts_bench.py).
    host_counts: tuple[int, ...] = (20, 100, 200)
    # llama-bench, llama-speculative and llama-speculative-simple (bench/native_tools.py):
    # None, with the reason, when they could not be built or no section needs them.
    tools_bin: Path | None = None
    tools_problem: str | None = None
    # llama-server (bench/server_build.py): None, with the reason, when it could not be built
    # or no section needs it.
    server_bin: Path | None = None
    server_problem: str | None = None
    # Filled in by sections for later ones (bandwidth reuses the plain section's speeds).
    shared: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)


@dataclass
class Section:
    name: str
    rows: list[BenchRow] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # settings and context for the reader
    skipped: str | None = None  # why the section did not run at all

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "skipped": self.skipped, "info": self.info,
                "rows": [r.as_dict() for r in self.rows]}


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def alternate(repeats: int, arms: dict[str, Callable[[], T]],
              log: Callable[[str], None] | None = None) -> dict[str, list[T]]:
    """Run every arm `repeats` times, interleaved, rotating the order each repeat
    (A B, B A, A B, ... for two arms) so slow drift in the machine's state (heat, other
    load, page cache) falls on both sides alike instead of on whichever runs last."""
    names = list(arms)
    out: dict[str, list[T]] = {n: [] for n in names}
    for r in range(repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            value = arms[name]()
            out[name].append(value)
            if log is not None:
                log(f"repeat {r + 1}/{repeats} {name}: {_short(value)}")
    return out


def _short(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_short(v)}" for k, v in value.items()
                         if isinstance(v, int | float) and not isinstance(v, bool))
    return str(value)


def check_at_least(value: float | None, minimum: float) -> bool | None:
    return None if value is None else value >= minimum


def check_at_most(value: float | None, maximum: float) -> bool | None:
    return None if value is None else value <= maximum

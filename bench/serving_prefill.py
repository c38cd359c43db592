"""Where a serving campaign's target prefill time goes, by strategy and concurrency: for every
results file given (default: the committed serving campaigns under results/ whose requests
record their prefill).

    .venv/bin/python -m bench.serving_prefill [FILE ...]

A serving run's prefill is the same work whatever the strategy (each request's prompt, less
its last token, in one target pass timed alone: phase.decode.batched), and it is over half of
each run on a 2-core CPU, so a strategy whose runs prefill slower loses throughput that its
proposals did not cost. Two tables per file:

- per level and strategy, the runs' prefill per token (their requests' prefill over their
  prompt tokens) as a mean over the undisturbed runs, its ratio to plain's at that level with
  Welch's t test (scipy.stats.ttest_ind), and how many other requests were active, on
  average, when each request was admitted;
- within runs, the change of a request's prefill per token with each other request active at
  its admission (scipy.stats.linregress on both taken relative to their run's mean, so the
  machine's drift between runs cancels): what the shared KV cache's occupancy costs a
  prefill, measured alone by bench/prefill_occupancy.py.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from scipy import stats

from phase.policy.strategies import is_baseline
from phase.results import ResultsFile, Run, load
from phase.results.serving import ServingRequest

REPO = Path(__file__).resolve().parent.parent


def _files(args: list[str]) -> list[Path]:
    return [Path(a) for a in args] if args else sorted((REPO / "results").glob("serving-*.json"))


def _others(requests: list[ServingRequest], request: ServingRequest) -> int:
    """Requests active (admitted, not finished) when `request` was admitted."""
    return sum(1 for o in requests if o is not request
               and o.admission_s < request.admission_s < o.finish_s)


def _per_token_ms(request: ServingRequest) -> float | None:
    if request.prefill_s is None or request.prompt_tokens < 2:
        return None
    return 1000.0 * request.prefill_s / (request.prompt_tokens - 1)


def _by_condition(runs: list[Run]) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(level, strategy) -> per run: (prefill ms per token, mean other requests at admission)."""
    out: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for run in runs:
        if run.serving is None or run.disturbed:
            continue
        requests = run.serving.requests
        timed = [r for r in requests if _per_token_ms(r) is not None]
        if not timed:
            continue
        ms = 1000.0 * sum(r.prefill_s or 0.0 for r in timed) / sum(
            r.prompt_tokens - 1 for r in timed)
        others = statistics.mean(_others(requests, r) for r in requests)
        out[(run.serving.concurrency, run.strategy)].append((ms, others))
    return out


def _condition_table(results: ResultsFile) -> list[str]:
    rows = ["| concurrency | strategy | runs | prefill ms/token (mean) | vs plain | Welch p "
            "| others active at admission |", "|---|---|---|---|---|---|---|"]
    conditions = _by_condition(results.runs)
    for (level, strategy), values in sorted(conditions.items()):
        ms = [v[0] for v in values]
        plain = [v[0] for (at, s), vs in conditions.items() if at == level and is_baseline(s)
                 for v in vs]
        ratio, p = "-", "-"
        if not is_baseline(strategy) and len(plain) > 1 and len(ms) > 1:
            ratio = f"{statistics.mean(ms) / statistics.mean(plain):.3f}x"
            p = f"{stats.ttest_ind(ms, plain, equal_var=False).pvalue:.3f}"
        rows.append(f"| {level} | {strategy} | {len(ms)} | {statistics.mean(ms):.2f} | {ratio} "
                    f"| {p} | {statistics.mean(v[1] for v in values):.2f} |")
    return rows


def _within_runs(results: ResultsFile) -> str:
    """The within-run slope of prefill per token on the other requests active, in % per
    request, with its 95% interval."""
    xs: list[float] = []
    ys: list[float] = []
    for run in results.runs:
        if run.serving is None or run.disturbed:
            continue
        requests = run.serving.requests
        pairs = [(float(_others(requests, r)), ms) for r in requests
                 if (ms := _per_token_ms(r)) is not None]
        if len(pairs) < 2:
            continue
        mean_x = statistics.mean(x for x, _ in pairs)
        mean_y = statistics.mean(y for _, y in pairs)
        xs.extend(x - mean_x for x, _ in pairs)
        ys.extend(y / mean_y - 1.0 for _, y in pairs)
    if len(xs) < 3 or len(set(xs)) < 2:
        return "within runs: too few admissions to fit"
    fit = stats.linregress(xs, ys)
    half = stats.t.ppf(0.975, len(xs) - 2) * fit.stderr
    return (f"within runs ({len(xs)} admissions): each other request active adds "
            f"{100 * fit.slope:+.2f}% to a request's prefill per token (95% interval "
            f"{100 * (fit.slope - half):+.2f}% to {100 * (fit.slope + half):+.2f}%)")


def main(argv: list[str]) -> None:
    for path in _files(argv):
        results = load(path)
        if not isinstance(results, ResultsFile) or not any(
                r.serving is not None and any(q.prefill_s is not None for q in r.serving.requests)
                for r in results.runs):
            continue
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        print(f"\n## {shown}\n")
        print("\n".join(_condition_table(results)))
        print(f"\n{_within_runs(results)}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""What a campaign's stated time would have said, before and after runs were priced by their
strategy (phase.campaign.duration), against what its runs took: for every results file given
(default: the committed ones under results/ and bench/results/) that has a cost profile.

    .venv/bin/python -m bench.stated_duration [FILE ...]

"plain-priced" is the statement before (every run at plain decoding's predicted speed, no
prefill), "by strategy" the one now (each run's prefill taken as its prompt's plain runs'
median, the reference's not being recorded); "took" is the span from the first run's start
to the last run's end, the whole campaign (re-runs and adaptive rounds included, which the
statement states as budgets, not times); "re-runs" is their own time within it. Prints a
Markdown table.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from phase.campaign import duration, windows
from phase.policy.strategies import is_baseline, parse_strategy
from phase.results import ResultsFile, load
from phase.results.schedule import planned_schedule

REPO = Path(__file__).resolve().parent.parent


def _files(args: list[str]) -> list[Path]:
    if args:
        return [Path(a) for a in args]
    found = sorted((REPO / "results").glob("*.json")) + sorted(
        (REPO / "bench" / "results").rglob("*.json"))
    return [p for p in found if p.name != "schema.json"]


def _estimates(results: ResultsFile) -> tuple[float | None, float | None]:
    """The plain-priced and the by-strategy estimate of the file's planned runs."""
    config = results.config
    strategies = {s: parse_strategy(s, ngram_n_min=config.ngram_n_min,
                                    ngram_n_max=config.ngram_n_max, ngram_k=config.ngram_k,
                                    ngram_adaptive=config.ngram_adaptive)
                  for s in config.strategies}
    lengths = {r.prompt: r.prompt_tokens for r in results.runs}
    size = windows.WindowSize(config.window_min_s, "as recorded")
    planned = windows.plan_windows(size, strategies, lengths, config.tokens,
                                   config.max_passes or 1, results.profile)
    runs = planned_schedule(config)
    prices = duration.decode_prices(results.profile, lengths, strategies, config.tokens)
    # The plain reference's prefill is not recorded: its plain runs' median stands in.
    prefill = {p: statistics.median(r.prefill_s for r in results.runs
                                    if r.prompt == p and is_baseline(r.strategy))
               for p in lengths if any(r.prompt == p and is_baseline(r.strategy)
                                       for r in results.runs)}
    if config.serving is not None:
        # A serving run's prefill is its requests' (prompt, pool): one request's share each.
        share = statistics.median(r.prefill_s for r in results.runs
                                  if is_baseline(r.strategy)) / config.serving.requests
        prefill = {p.name: share for p in config.prompts}
    return (duration.estimate(runs, planned, config).estimated_s,
            duration.estimate(runs, planned, config, prices=prices,
                              prefill_s=prefill).estimated_s)


def _row(path: Path) -> str | None:
    try:
        results = load(path)
    except Exception:  # a summary or another kind of file: not a campaign's runs
        return None
    if not isinstance(results, ResultsFile) or results.profile is None or not results.runs:
        return None
    plain_s, strategy_s = _estimates(results)
    runs = results.runs
    took = max(r.ended_unix_s for r in runs) - min(r.started_unix_s for r in runs)
    reruns = sum(r.ended_unix_s - r.started_unix_s for r in runs if r.rerun_of is not None)
    planned = len(planned_schedule(results.config))

    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f} s ({took / v:.2f}x)"

    return (f"| {path.relative_to(REPO) if path.is_relative_to(REPO) else path} | "
            f"{len(runs)} / {planned} | {cell(plain_s)} | {cell(strategy_s)} | {took:.0f} s | "
            f"{reruns:.0f} s |")


def main(argv: list[str]) -> None:
    print(f"by strategy: draft-k at an assumed per-position acceptance of "
          f"{duration.ASSUMED_RATE:g}; (Nx): took / stated\n")
    print("| file | runs / planned | plain-priced | by strategy | took | re-runs |")
    print("|---|---|---|---|---|---|")
    for path in _files(argv):
        row = _row(path.resolve())
        if row is not None:
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])

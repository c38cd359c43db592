"""How site build time grows with the number of campaigns.

For each count N, a temporary results directory gets N synthetic but schema-valid campaigns
(3 prompts x 6 strategies x 3 repeats, 384 tokens per run, per-step traces, two energy
counters with 20 Hz sample traces over each run's idle and decode windows) built with the
test factories (tests/factories.py), named so the repository's draft note picks them up
(`speculative-*.json`), plus the files the repository's notes cite by name. Then the real
publisher builds the real site from the repository's notes, templates, docs and mkdocs.yml
into temporary directories: validate every file -> derived summaries -> note and raw-data
pages -> `mkdocs build --strict`. Nothing in the repository is written.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import REPO, Context, Section, check_at_most, median
from phase.analysis.bench_rows import BenchRow
from phase.policy.strategies import is_baseline
from phase.publish.notes.source import GLOB_CHARS, discover_notes
from phase.publish.site.build import SitePaths, build_docs
from phase.publish.site.mkdocs_run import mkdocs_build

PROMPTS = ("code", "edit", "prose")
STRATEGIES = ("plain", "draft-2", "draft-4", "draft-8", "draft-16", "ngram-8")
REPEATS = 3
TOKENS = 384
SAMPLE_HZ = 20.0
IDLE_S = 1.0
MAX_SECONDS_50 = 30.0  # 50 campaigns build in under 30 s

# Plausible shapes for a 2-core CPU host (speed and acceptance per strategy); the numbers only
# have to make every table, chart and rule do its normal amount of work.
SPEED = {"plain": 34.0, "draft-2": 17.9, "draft-4": 16.5, "draft-8": 12.5, "draft-16": 8.0,
         "ngram-8": 30.0}
ACCEPTANCE = {"draft-2": 0.89, "draft-4": 0.84, "draft-8": 0.69, "draft-16": 0.5,
              "ngram-8": 0.6}
POWER_W = {"chip": 9.0, "module": 2.5}


def _factories() -> ModuleType:
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module("factories")


def _trace(f: ModuleType, k: int | None, acceptance: float | None, decode_s: float) -> list[Any]:
    from phase.results import Step

    if k is None or acceptance is None:
        ms = 1e3 * decode_s / TOKENS
        return [Step(proposed=0, accepted=0, propose_ms=0.0, verify_ms=ms)] * TOKENS
    kept = min(k, round(acceptance * k))
    # As the engine proposes: never more than the tokens left before the target's own one.
    pattern, left = [], TOKENS
    while left > 0:
        proposed = min(k, left - 1)
        accepted = min(kept, proposed)
        pattern.append((proposed, accepted))
        left -= accepted + 1
    ms = 1e3 * decode_s / len(pattern)
    trace = [Step(proposed=p, accepted=a, propose_ms=0.3 * ms, verify_ms=0.7 * ms)
             for p, a in pattern]
    return trace


def campaign(f: ModuleType, index: int) -> Any:
    """One synthetic campaign (a ResultsFile)."""
    sensors = [f.make_sensor("rapl:package-0", scope="chip", kind="counter"),
               f.make_sensor("rapl:package-0/dram", scope="module", kind="counter")]
    runs = []
    clock = f.T0 + index * 86_400.0
    order = 0
    for repeat in range(REPEATS):
        for prompt in PROMPTS:
            for strategy in STRATEGIES:
                k = None if is_baseline(strategy) else int(strategy.rsplit("-", 1)[1])
                acc = ACCEPTANCE.get(strategy)
                # +-1% between repeats: realistic spread, well inside the variance rule
                decode_s = TOKENS / SPEED[strategy] * (1 + 0.01 * (repeat - 1))
                steps = _trace(f, k, acc, decode_s)
                drafted = sum(s.proposed for s in steps)
                accepted = sum(s.accepted for s in steps)
                start = clock + f.PREFILL_S
                n = int((IDLE_S + decode_s) * SAMPLE_HZ)
                samples, windows = [], []
                for s in sensors:
                    watts = POWER_W[s.scope]
                    values = [1000.0 + watts * i / SAMPLE_HZ for i in range(n)]
                    samples.append(f.make_trace(s.name, values, dt_s=1 / SAMPLE_HZ))
                    windows.append(f.make_window(s.name, start_unix_s=start, window_s=decode_s,
                                                 energy_j=watts * decode_s,
                                                 samples=int(decode_s * SAMPLE_HZ)))
                runs.append(f.make_run(
                    prompt=prompt, strategy=strategy, repeat=repeat, order=order,
                    tokens=TOKENS, decode_s=decode_s, started_unix_s=clock, energy=windows,
                    samples=samples, k=k, steps=len(steps), trace=steps, drafted=drafted,
                    accepted=accepted, acceptance=accepted / drafted if drafted else None,
                    acceptance_reason=None if drafted else "plain decoding proposes no tokens",
                ))
                clock += f.PREFILL_S + decode_s + f.GAP_S
                order += 1
    return f.make_results(
        runs, sensors=sensors, prompts=list(PROMPTS), strategies=list(STRATEGIES),
        repeats=REPEATS, tokens=TOKENS, id=f"speculative-bench{index:03d}",
        experiment="speculative",
    )


def _cited_by_name(notes_dir: Path, results_dir: Path) -> list[Path]:
    """Files the repository's notes list by explicit name (a build fails without them)."""
    out: list[Path] = []
    for note in discover_notes(notes_dir):
        for version in note.meta.versions:
            for entry in version.results:
                path = results_dir / entry
                if not GLOB_CHARS & set(entry) and path.is_file() and path not in out:
                    out.append(path)
    return out


def _paths(root: Path) -> SitePaths:
    return SitePaths.default(REPO, results_dir=root / "results", docs_dir=root / "docs",
                             site_dir=root / "site", published_dir=root / "published")


def build_once(paths: SitePaths) -> dict[str, float]:
    t0 = time.perf_counter()
    result = build_docs(paths)
    t1 = time.perf_counter()
    mkdocs_build(paths.mkdocs_yml, paths.docs_dir, paths.site_dir, result.notes)
    t2 = time.perf_counter()
    return {"total_s": t2 - t0, "render_s": t1 - t0, "mkdocs_s": t2 - t1}


def run(ctx: Context) -> Section:
    """The site section. Long because each count builds, times and describes one site in
    one pass; a benchmark script, run only by hand (bench/run.py), so it is kept as
    measured rather than split untested."""
    section = Section("site")
    f = _factories()
    base = SitePaths.default(REPO)
    cited = _cited_by_name(base.notes_dir, base.results_dir)
    repeats = max(1, ctx.repeats)
    section.info = {
        "campaign": f"{len(PROMPTS)} prompts x {len(STRATEGIES)} strategies x {REPEATS} "
                    f"repeats, {TOKENS} tokens/run, 2 counters sampled at {SAMPLE_HZ:g} Hz",
        "notes": [p.name for p in sorted(base.notes_dir.glob("*.md"))],
        "also_copied": [p.name for p in cited],
        "repeats": repeats,
        "note": "one untimed warm-up build first (imports); the warm-up writes the derived "
                "summaries of the first count, repeat 1 those of the others",
    }
    timings: dict[int, list[dict[str, float]]] = {}
    sizes: dict[int, int] = {}
    one = campaign(f, 0)  # built once: the runs are identical apart from id and clock
    for count in ctx.site_counts:
        root = ctx.workdir / f"site-{count}"
        paths = _paths(root)
        paths.results_dir.mkdir(parents=True)
        for p in cited:
            shutil.copyfile(p, paths.results_dir / p.name)
        for i in range(count):
            results = one.model_copy(update={"id": f"speculative-bench{i:03d}"})
            f.write_results(results, paths.results_dir / f"speculative-bench{i:03d}.json")
        sizes[count] = sum(p.stat().st_size for p in paths.results_dir.glob("*.json"))
        timings[count] = []
        if count == ctx.site_counts[0]:
            # Untimed: the first build in a process pays for imports (jinja2, altair, mkdocs,
            # the theme) that every later build, and every `make site`, pays only once.
            build_once(paths)
        for r in range(repeats):
            t = build_once(paths)
            timings[count].append(t)
            ctx.log(f"{count} campaign(s), build {r + 1}/{repeats}: {t['total_s']:.2f} s "
                    f"(render {t['render_s']:.2f} s, mkdocs {t['mkdocs_s']:.2f} s)")
        shutil.rmtree(root)
    totals = {c: median([t["total_s"] for t in ts]) or 0.0 for c, ts in timings.items()}
    counts = sorted(totals)
    slope = None
    if len(counts) >= 2 and counts[-1] != counts[0]:
        slope = (totals[counts[-1]] - totals[counts[0]]) / (counts[-1] - counts[0])
    section.info["seconds_per_extra_campaign"] = slope
    for count in counts:
        ts = timings[count]
        checked = count == 50
        section.rows.append(BenchRow(
            "site", f"site build, {count} campaign(s)", totals[count],
            MAX_SECONDS_50 if checked else None, "budget" if checked else "", "s",
            None, f"< {MAX_SECONDS_50:g} s" if checked else None,
            check_at_most(totals[count], MAX_SECONDS_50 - 1e-9) if checked else None,
            f"render {median([t['render_s'] for t in ts]):.2f} s + mkdocs "
            f"{median([t['mkdocs_s'] for t in ts]):.2f} s; results "
            f"{sizes[count] / 1e6:.1f} MB",
            {"total_s": [t["total_s"] for t in ts], "render_s": [t["render_s"] for t in ts],
             "mkdocs_s": [t["mkdocs_s"] for t in ts]},
        ))
    if 50 not in totals and slope is not None:
        estimate = totals[counts[0]] + slope * (50 - counts[0])
        section.rows.append(BenchRow(
            "site", "site build, 50 campaigns (linear estimate)", estimate, MAX_SECONDS_50,
            "budget", "s", None, None, None,
            f"{slope:.2f} s per extra campaign from {counts[0]}..{counts[-1]} campaigns; "
            f"an estimate, not the < {MAX_SECONDS_50:g} s check (run 50 to check it)",
        ))
    return section

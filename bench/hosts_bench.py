"""Site build time with many campaigns from many host classes: does it stay linear?

For each count N, a temporary results directory gets N synthetic, schema-valid campaigns of the
site section's shape (bench/site_bench.py: 3 prompts x 6 strategies x 3 repeats, 384 tokens per
run, per-step traces, two counters sampled at 20 Hz), spread over HOST_CLASSES host classes
(each file with its own host and a host identity of its class), plus the files the
repository's notes cite by name. The real publisher builds the real site from them into
temporary directories (validate, summaries, note and data pages, the cross-host page,
`mkdocs build --strict`). Checks: N = 200 builds in under 20 s, and the time per extra file
at the largest counts is at most 1.5 times that at the smallest (linear, not quadratic).
The cross-host page's own rendering is timed apart. Nothing in the repository is written.

Three builds are timed per count, all `build_site` into a temporary archive: the first build
of a results directory, which renders every campaign's note version and freezes it (what
`make site` does once, after a campaign), the rebuild, where the published versions are
served from the archive and unchanged files from the build cache (every later `make site`),
and the same rebuild with an empty build cache (a fresh machine, or the first build after
phase itself changed), which reads every file in full. The 20 s check is on the rebuild; the
other two are reported beside it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import replace
from typing import Any

from bench.common import REPO, Context, Section, check_at_most, median
from bench.site_bench import _cited_by_name, _factories, _paths, build_once, campaign
from phase.analysis.bench_rows import BenchRow
from phase.publish.notes.render import environment
from phase.publish.pages.crosshost import render_pages
from phase.publish.site.build import SitePaths, build_docs, build_site
from phase.results import HostIdentity, HostInfo

HOST_CLASSES = 10
MAX_SECONDS_200 = 20.0
MAX_SLOPE_GROWTH = 1.5
# Below this many campaigns a build's fixed costs and noise swamp the per-file slope: the
# linearity verdict is given only from here up (smaller counts still report the ratio).
MIN_COUNT_FOR_SLOPE = 10


def on_host(base: Any, index: int) -> Any:
    """Campaign `index`, measured on host `node<index>` of class `class<index % K>`."""
    k = index % HOST_CLASSES
    identity = HostIdentity(cpu_model=f"Bench CPU model {k}", cpu_cores=8 * (k + 1),
                            ram_gib=32 * (k + 1), gpus=[], gpu_driver=None, accelerator="cpu")
    label = f"bench{k}-{8 * (k + 1)}c"
    name = f"speculative-hosts{index:03d}"
    provenance = base.provenance.model_copy(update={"hostname": f"node{index}",
                                                    "host_class": label})
    return base.model_copy(update={
        "id": name, "provenance": provenance,
        "hosts": [HostInfo(hostname=f"node{index}", host_class=label, identity=identity)],
    })


def _site_s(paths: SitePaths) -> float:
    t0 = time.perf_counter()
    build_site(paths)
    return time.perf_counter() - t0


def _cold_s(paths: SitePaths) -> float:
    """A rebuild with an empty build cache (PHASE_CACHE pointed at a new directory)."""
    before = os.environ.get("PHASE_CACHE")
    with tempfile.TemporaryDirectory(prefix="phase-cold-cache-") as empty:
        os.environ["PHASE_CACHE"] = empty
        try:
            return _site_s(paths)
        finally:
            if before is None:
                del os.environ["PHASE_CACHE"]
            else:
                os.environ["PHASE_CACHE"] = before


def _slope(totals: dict[int, float], a: int, b: int) -> float | None:
    return (totals[b] - totals[a]) / (b - a) if b != a else None


def _crosshost_s(paths: SitePaths) -> float:
    """The cross-host pages alone, rendered from the datasets a build validated."""
    datasets = build_docs(paths).datasets
    t0 = time.perf_counter()
    render_pages(environment(paths.templates_dir), datasets)
    return time.perf_counter() - t0


def run(ctx: Context) -> Section:
    """The hosts section. Long because each count builds, times and describes one site in
    one pass, and the growth rows read every count's totals; a benchmark script, run only
    by hand (bench/run.py), so it is kept as measured rather than split untested."""
    section = Section("hosts")
    f = _factories()
    base_paths = SitePaths.default(REPO)
    cited = _cited_by_name(base_paths.notes_dir, base_paths.results_dir)
    one = campaign(f, 0)  # built once: the files differ in id and host only
    counts = sorted(ctx.host_counts)
    repeats = max(1, ctx.repeats)
    section.info = {
        "campaigns": f"site section's shape, over {HOST_CLASSES} host classes",
        "counts": counts, "repeats": repeats,
        "note": "one untimed warm-up build first (imports)",
    }
    totals: dict[int, float] = {}
    for n, count in enumerate(counts):
        root = ctx.workdir / f"hosts-{count}"
        paths = _paths(root)
        paths.results_dir.mkdir(parents=True)
        for p in cited:
            shutil.copyfile(p, paths.results_dir / p.name)
        for i in range(count):
            results = on_host(one, i)
            f.write_results(results, paths.results_dir / f"{results.id}.json")
        if n == 0:
            build_once(paths)
        runs = [build_once(paths) for _ in range(repeats)]
        totals[count] = median([t["total_s"] for t in runs]) or 0.0
        cross_s = _crosshost_s(paths)
        # Into directories of its own: build_once's are not phase-made ones that it may replace.
        site_paths = replace(paths, docs_dir=root / "site-docs", site_dir=root / "site-site")
        first_s = _site_s(site_paths)  # renders and freezes every version
        rebuilds = [_site_s(site_paths) for _ in range(repeats)]
        rebuild_s = median(rebuilds) or 0.0
        cold_s = _cold_s(site_paths)
        ctx.log(f"{count} campaign(s) over {min(count, HOST_CLASSES)} host classes: "
                f"{totals[count]:.2f} s rendering every version unfrozen, first build "
                f"{first_s:.2f} s, rebuild {rebuild_s:.2f} s, rebuild with an empty build "
                f"cache {cold_s:.2f} s (cross-host page {cross_s:.3f} s)")
        checked = count == 200
        classes = min(count, HOST_CLASSES)
        section.rows.append(BenchRow(
            "hosts", f"site rebuild (versions published), {count} campaigns, {classes} host "
            "classes", rebuild_s, MAX_SECONDS_200 if checked else None,
            "budget" if checked else "", "s", None,
            f"< {MAX_SECONDS_200:g} s" if checked else None,
            check_at_most(rebuild_s, MAX_SECONDS_200) if checked else None,
            f"first build (renders and freezes {count} versions) {first_s:.1f} s; "
            f"with an empty build cache {cold_s:.1f} s",
            {"rebuild_s": rebuilds, "first_build_s": [first_s], "cold_cache_rebuild_s": [cold_s]},
        ))
        section.rows.append(BenchRow(
            "hosts", f"site build rendering every version, {count} campaigns, {classes} host "
            "classes", totals[count], None, "", "s", None, None, None,
            f"cross-host page {cross_s:.3f} s",
            {"total_s": [t["total_s"] for t in runs], "render_s": [t["render_s"] for t in runs],
             "mkdocs_s": [t["mkdocs_s"] for t in runs], "crosshost_s": [cross_s]},
        ))
        shutil.rmtree(root)
    if len(counts) >= 3:
        first = _slope(totals, counts[0], counts[1])
        last = _slope(totals, counts[-2], counts[-1])
        growth = last / first if first and last is not None and first > 0 else None
        judged = growth is not None and counts[0] >= MIN_COUNT_FOR_SLOPE
        section.rows.append(BenchRow(
            "hosts", "seconds per extra campaign, largest counts vs smallest", last, first,
            f"{counts[0]}..{counts[1]}", "s/file", growth,
            f"<= {MAX_SLOPE_GROWTH:g}x" if judged else None,
            growth <= MAX_SLOPE_GROWTH if judged and growth is not None else None,
            f"{counts[-2]}..{counts[-1]} vs {counts[0]}..{counts[1]} campaigns",
        ))
    if 200 not in totals and len(counts) >= 2:
        slope = _slope(totals, counts[0], counts[-1]) or 0.0
        section.rows.append(BenchRow(
            "hosts", "site build, 200 campaigns (linear estimate)",
            totals[counts[0]] + slope * (200 - counts[0]), MAX_SECONDS_200, "budget", "s",
            None, None, None,
            f"{slope:.3f} s per extra campaign from {counts[0]}..{counts[-1]}: an estimate, "
            f"not the < {MAX_SECONDS_200:g} s check (run 200 to check it)",
        ))
    return section

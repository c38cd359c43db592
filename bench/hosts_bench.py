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
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from bench.common import REPO, Context, Row, Section, check_at_most, median
from bench.site_bench import _cited_by_name, _factories, _paths, build_once, campaign
from phase.publish.crosshost import render_pages
from phase.publish.render import environment
from phase.publish.site import SitePaths, build_docs
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


def _slope(totals: dict[int, float], a: int, b: int) -> float | None:
    return (totals[b] - totals[a]) / (b - a) if b != a else None


def _crosshost_s(paths: SitePaths) -> float:
    """The cross-host pages alone, rendered from the datasets a build validated."""
    datasets = build_docs(paths).datasets
    t0 = time.perf_counter()
    render_pages(environment(paths.templates_dir), datasets)
    return time.perf_counter() - t0


def run(ctx: Context) -> Section:
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
        ctx.log(f"{count} campaign(s) over {min(count, HOST_CLASSES)} host classes: "
                f"{totals[count]:.2f} s (cross-host page {cross_s:.3f} s)")
        checked = count == 200
        section.rows.append(Row(
            "hosts", f"site build, {count} campaigns, {min(count, HOST_CLASSES)} host classes",
            totals[count], MAX_SECONDS_200 if checked else None, "budget" if checked else "",
            "s", None, f"< {MAX_SECONDS_200:g} s" if checked else None,
            check_at_most(totals[count], MAX_SECONDS_200) if checked else None,
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
        section.rows.append(Row(
            "hosts", "seconds per extra campaign, largest counts vs smallest", last, first,
            f"{counts[0]}..{counts[1]}", "s/file", growth,
            f"<= {MAX_SLOPE_GROWTH:g}x" if judged else None,
            growth <= MAX_SLOPE_GROWTH if judged and growth is not None else None,
            f"{counts[-2]}..{counts[-1]} vs {counts[0]}..{counts[1]} campaigns",
        ))
    if 200 not in totals and len(counts) >= 2:
        slope = _slope(totals, counts[0], counts[-1]) or 0.0
        section.rows.append(Row(
            "hosts", "site build, 200 campaigns (linear estimate)",
            totals[counts[0]] + slope * (200 - counts[0]), MAX_SECONDS_200, "budget", "s",
            None, None, None,
            f"{slope:.3f} s per extra campaign from {counts[0]}..{counts[-1]}: an estimate, "
            f"not the < {MAX_SECONDS_200:g} s check (run 200 to check it)",
        ))
    return section

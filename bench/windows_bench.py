"""What sizing energy windows to the sensor, and accounting for disturbance, cost a quiet
campaign (issue 29: each < 2% of wall).

Three arms, interleaved (bench.common.alternate), each a real campaign of the speculative
experiment's quick plan (the small test model, one prompt, plain and draft-4, no profile,
no cooldown) through `prepare` and `Campaign.run`: neither (the baseline), `size_windows`
alone, and disturbance accounting alone (`disturbed_load` set: /proc read around every run,
NVML asked where a GPU is measured, re-runs armed; a quiet machine re-runs nothing). The
quiet-machine check before a campaign is a fixed `quiet_check_s` of sleep, not a per-run
cost, and is left out of every arm (the row says what it adds to a study). The
sensor is the real RAPL backend reading a package zone whose energy_uj a thread of this
bench advances every millisecond, as RAPL does (the tree lives in the bench's temporary
directory; nothing here is ever a `phase measure` results file). A 1 ms counter needs a
window of a few hundredths of a second, so every decode fills it in one pass: what the row
measures is the machinery alone (sizing the window, the plan printed before the runs, the
pass records, the window-length check after each decode), which a quiet campaign pays
whether or not its sensor needs repeats. The figure is the wall time of `Campaign.run` per
arm (model loading left out, as it is the same in both); the ratio is the median of each
repeat's paired ratio (the arms of one repeat run back to back), with its bootstrap 95%
interval, so drift between repeats cancels. Decoding uses one thread: on a 2-core machine two
decode threads leave none for the sampler, the counter's writer and the kernel, and the
campaign's spread (12-16% at 2 threads) then hides a 2% effect.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from bench.common import Context, Section, alternate, check_at_most, median, ratio
from phase.analysis.bench_rows import BenchRow
from phase.analysis.intervals import Interval, ratio_interval
from phase.campaign import QuietObserver, load_experiment, prepare
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors

MAX_OVERHEAD = 0.02  # sized / unsized wall time <= 1.02
COUNTER_PERIOD_S = 0.001
POWER_W = 20.0


@contextmanager
def rapl_like_counter(root: Path) -> Iterator[Path]:
    """A package zone whose counter advances every COUNTER_PERIOD_S at POWER_W, written in
    place (the backend keeps the file open, as it does the kernel's)."""
    zone = root / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    counter = zone / "energy_uj"
    counter.write_text(f"{0:>15d}\n")
    stop = threading.Event()
    t0 = time.monotonic()

    def advance() -> None:
        with counter.open("r+") as fh:
            while not stop.wait(COUNTER_PERIOD_S):
                fh.seek(0)
                fh.write(f"{round(POWER_W * (time.monotonic() - t0) * 1e6):>15d}\n")
                fh.flush()

    writer = threading.Thread(target=advance, daemon=True)
    writer.start()
    try:
        yield root / "powercap"
    finally:
        stop.set()
        writer.join()


def run(ctx: Context) -> Section:
    """The windows section. Long because its three arms share one campaign closure and the
    rows read their runs, windows and passes; a benchmark script, run only by hand
    (bench/run.py), so it is kept as measured rather than split untested."""
    section = Section("windows")
    experiment = load_experiment("speculative")
    assert experiment.quick is not None
    study = experiment.plan  # the study plan's disturbance settings
    base = replace(experiment.quick, prompts=("code",), strategies=("plain", "draft-4"),
                   tokens=ctx.tokens, repeats=2, profile=False, cooldown_s=0.0,
                   idle_window_s=0.1, quiet_check_s=0.0, disturbed_load=None,
                   threads=1, threads_batch=1,
                   target=str(ctx.target_path), draft=str(ctx.target_path))
    counts = {"n": 0}
    passes: dict[str, list[int]] = {"sized": [], "unsized": [], "accounted": []}
    disturbed: list[int] = []
    windows: list[float] = []

    with rapl_like_counter(ctx.workdir / "windows") as powercap:
        options = SensorOptions(rapl_root=str(powercap),
                                hwmon_root=str(ctx.workdir / "windows" / "none"))

        def arm(sized: bool, accounted: bool = False) -> float:
            counts["n"] += 1
            out = ctx.workdir / "windows" / f"c{counts['n']}.json"
            plan = replace(base, size_windows=sized,
                           disturbed_load=study.disturbed_load if accounted else None)
            with prepare(experiment, plan, Destination(out), discover_sensors(options),
                         QuietObserver()) as campaign:
                t0 = time.perf_counter()
                results = campaign.run()
                wall = time.perf_counter() - t0
            name = "accounted" if accounted else "sized" if sized else "unsized"
            passes[name] += [max(1, len(r.passes)) for r in results.runs]
            if accounted:
                disturbed.append(sum(r.disturbed for r in results.runs))
            if sized and results.config.window_min_s is not None:
                windows.append(results.config.window_min_s)
            return wall

        runs = alternate(ctx.repeats, {"unsized": lambda: arm(False),
                                       "sized": lambda: arm(True),
                                       "accounted": lambda: arm(False, True)}, ctx.log)
    unsized, sized = median(runs["unsized"]), median(runs["sized"])
    accounted = median(runs["accounted"])
    paired_sized = _paired(runs["sized"], runs["unsized"])
    paired_acc = _paired(runs["accounted"], runs["unsized"])
    r = paired_sized.centre if paired_sized else ratio(sized, unsized)
    r_acc = paired_acc.centre if paired_acc else ratio(accounted, unsized)
    section.info = {
        "model": ctx.target_name, "plan": "speculative quick: code; plain, draft-4; "
        f"{ctx.tokens} tokens; 2 repeats; no profile; 1 thread",
        "counter_period_s": COUNTER_PERIOD_S,
        "window_min_s": median(windows), "passes_sized": passes["sized"],
        "passes_unsized": passes["unsized"],
    }
    overhead = None if r is None else r - 1
    section.rows.append(BenchRow(
        "windows", "campaign wall, windows sized", sized, unsized, "not sized", "s", r,
        f"<= {1 + MAX_OVERHEAD:.2f}x", check_at_most(r, 1 + MAX_OVERHEAD),
        (f"overhead {100 * overhead:+.2f}% of the campaign's wall time "
         f"({_describe(paired_sized)}); window >= "
         f"{median(windows) or 0:.3g} s, passes per run {sorted(set(passes['sized']))}"
         if overhead is not None else ""),
        {"not sized": runs["unsized"], "sized": runs["sized"]},
    ))
    acc_overhead = None if r_acc is None else r_acc - 1
    section.rows.append(BenchRow(
        "windows", "campaign wall, disturbance accounted", accounted, unsized, "not accounted",
        "s", r_acc, f"<= {1 + MAX_OVERHEAD:.2f}x", check_at_most(r_acc, 1 + MAX_OVERHEAD),
        (f"overhead {100 * acc_overhead:+.2f}% of the campaign's wall time "
         f"({_describe(paired_acc)}); runs marked "
         f"disturbed per campaign {disturbed} (a quiet machine: 0); the quiet-machine check "
         f"adds {study.quiet_check_s:g} s once per campaign"
         if acc_overhead is not None else ""),
        {"not accounted": runs["unsized"], "accounted": runs["accounted"]},
    ))
    return section


def _paired(arm: list[float], baseline: list[float]) -> Interval | None:
    """The median of per-repeat ratios arm/baseline, with its bootstrap 95% interval."""
    return ratio_interval(dict(enumerate(arm)), dict(enumerate(baseline)))


def _describe(interval: Interval | None) -> str:
    if interval is None:
        return "one repeat: no interval"
    return (f"median of {interval.n} paired ratios, 95% interval "
            f"{interval.low:.3f}-{interval.high:.3f}x")

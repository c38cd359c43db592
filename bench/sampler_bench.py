"""What the energy sampler costs: phase plain tokens/s with no sampler, and at 20 and 100 Hz.

No energy sensor is readable on a typical CI or cloud machine, so the sensors here are the
real RAPL backend reading a real file tree shaped like an Intel desktop's powercap directory
(tests/fixtures/sensors/sysfs_trees.json, written into a temporary directory). What is
measured is therefore the real cost: the real sampler thread, waking at its rate, taking its
lock and pread-ing each zone's energy_uj, while the decode loop runs. The run is wrapped the
way a campaign wraps it: window begin, start at decode start, stop at decode end, then
the window's result (outside the timed decode).

A second, steadier figure: the sampler thread's own CPU time per second of wall time while a
window is open and nothing else runs, i.e. the share of one core it takes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO, Context, Section, alternate, check_at_least, median, ratio
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine
from phase.policy.strategies import parse_strategy
from phase.sensors import Sampler, discover

FIXTURE = REPO / "tests" / "fixtures" / "sensors" / "sysfs_trees.json"
MAX_OVERHEAD = 0.005  # <= 0.5% at 20 Hz
CHECKED_HZ = 20.0


def write_powercap(root: Path) -> Path:
    """The fixture powercap tree as real files under root; returns root."""
    spec = json.loads(FIXTURE.read_text(encoding="utf-8"))["powercap"]
    for rel, content in spec.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content + "\n", encoding="utf-8")
    return root


def _sampler(powercap: Path, empty: Path, hz: float) -> Sampler:
    found = discover(rapl_root=powercap, hwmon_root=empty, nvml_enabled=False,
                     apple_enabled=False)
    if not found.sensors:
        reasons = "; ".join(u.reason for u in found.unavailable)
        raise RuntimeError(f"the RAPL fixture tree gave no sensors: {reasons}")
    sampler = Sampler(found.sensors, hz=hz, probe_s=0.2)
    sampler.start()
    return sampler


def _cpu_share(sampler: Sampler, seconds: float) -> float:
    """Process CPU seconds per wall second with a window open and the main thread asleep."""
    window = sampler.begin(idle_s=0)
    window.start()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    window.stop()
    window.result()
    return cpu / wall


def run(ctx: Context) -> Section:
    section = Section("sampler")
    powercap = write_powercap(ctx.workdir / "powercap")
    empty = ctx.workdir / "no-hwmon"
    empty.mkdir(exist_ok=True)
    strategy = parse_strategy("plain")
    samplers = {hz: _sampler(powercap, empty, hz) for hz in ctx.sampler_hz}
    try:
        sensor_names = [s.name for s in next(iter(samplers.values())).sensors] if samplers else []
        section.info = {
            "model": ctx.target_name, "prompt": PLAIN_PROMPT, "chat_template": False,
            "sensors": sensor_names, "fixture": str(FIXTURE.relative_to(REPO)),
        }
        with Engine(ctx.target_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
            prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=False)
            engine.run(prompt, strategy, min(ctx.tokens, 16))  # warm-up

            def bare() -> float:
                return engine.run(prompt, strategy, ctx.tokens).tokens_per_s

            def sampled(sampler: Sampler) -> Callable[[], float]:
                def arm() -> float:
                    window = sampler.begin(idle_s=0)
                    try:
                        r = engine.run(prompt, strategy, ctx.tokens,
                                       on_decode_start=window.start, on_decode_end=window.stop)
                    except BaseException:
                        window.stop()
                        raise
                    window.result()
                    return r.tokens_per_s
                return arm

            arms: dict[str, Callable[[], Any]] = {"0 Hz": bare}
            for hz, sampler in samplers.items():
                arms[f"{hz:g} Hz"] = sampled(sampler)
            runs = alternate(ctx.repeats, arms, ctx.log)
        share_s = 1.0 if ctx.quick else 3.0
        shares = {hz: _cpu_share(s, share_s) for hz, s in samplers.items()}
    finally:
        for sampler in samplers.values():
            sampler.close()
    base = median(runs["0 Hz"])
    section.info["sampler_cpu_share_of_one_core"] = {f"{hz:g} Hz": v for hz, v in shares.items()}
    for hz in ctx.sampler_hz:
        tps = median(runs[f"{hz:g} Hz"])
        r = ratio(tps, base)
        overhead = None if r is None else 1 - r
        checked = hz == CHECKED_HZ
        section.rows.append(BenchRow(
            "sampler", f"sampler {hz:g} Hz", tps, base, "no sampler", "tok/s", r,
            f">= {1 - MAX_OVERHEAD:.3f}x" if checked else None,
            check_at_least(r, 1 - MAX_OVERHEAD) if checked else None,
            f"overhead {100 * overhead:+.2f}%; sampler thread uses "
            f"{100 * shares[hz]:.3f}% of one core" if overhead is not None else "",
            {"no sampler": runs["0 Hz"], f"{hz:g} Hz": runs[f"{hz:g} Hz"]},
        ))
    return section

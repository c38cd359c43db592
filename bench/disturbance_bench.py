"""Calibrating disturbance on this machine class: how much a fixed plain decode slows under a
controlled CPU hog at several intensities, the foreign load each one reads as, and how far
quiet repeats of the same decode land apart.

The hog is one subprocess that spins for `duty` of every 20 ms and sleeps the rest (one
core's worth at duty 1). Intensities alternate with quiet repeats (round-robin, rotated
each repeat, as bench.common.alternate does), so drift falls on all alike. The section's
`info.calibration` is the record the defaults in phase/campaign/plan.py cite:

    noise_floor      the slowest quiet repeat against the others' median (tokens/s ratio):
                     a run slower than this is beyond what a quiet machine does here
    suggested_slow_vs_condition   that floor less a margin (MARGIN), rounded down to 0.05
    slowdown_by_duty median tokens/s at each duty over the quiet median, with the median
                     foreign load measured over those decodes
    suggested_disturbed_load      the lowest load (over the duties) whose median slowdown
                     is beyond the noise floor: load above it costs more than noise

    .venv/bin/python -m bench.run --only disturbance               # the default model
    .venv/bin/python -m bench.run --only disturbance --quick       # a smoke run

Run it on a quiet machine: other work is what it measures.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import Context, Section
from bench.decode_bench import PLAIN_PROMPT, PROMPTS
from phase.analysis.bench_rows import BenchRow
from phase.campaign import load_prompt
from phase.campaign.disturbance import LoadProbe
from phase.decode import Engine
from phase.policy.strategies import parse_strategy

DUTIES = (0.05, 0.10, 0.25, 0.50, 1.0)
QUICK_DUTIES = (0.25, 1.0)
PERIOD_S = 0.02
MARGIN = 0.05
HOG = ("import sys, time\n"
       "duty, period = float(sys.argv[1]), float(sys.argv[2])\n"
       "while True:\n"
       "    t = time.perf_counter()\n"
       "    while time.perf_counter() - t < duty * period:\n"
       "        pass\n"
       "    if duty < 1:\n"
       "        time.sleep((1 - duty) * period)\n")


def start_hog(duty: float, period_s: float = PERIOD_S) -> subprocess.Popen[bytes]:
    """A process that keeps `duty` of one core busy until killed."""
    return subprocess.Popen([sys.executable, "-c", HOG, str(duty), str(period_s)])


def stop_hog(hog: subprocess.Popen[bytes]) -> None:
    hog.kill()
    hog.wait()


def _decode(engine: Engine, prompt: list[int], tokens: int,
            probe: LoadProbe) -> dict[str, float | None]:
    strategy = parse_strategy("plain")
    before = probe.read()
    result = engine.run(prompt, strategy, tokens)
    load, _ = probe.foreign_load(before, probe.read())
    return {"tokens_per_s": result.tokens_per_s, "foreign_load": load}


def _arm(engine: Engine, prompt: list[int], tokens: int, probe: LoadProbe,
         duty: float) -> Callable[[], dict[str, float | None]]:
    def arm() -> dict[str, float | None]:
        if duty <= 0:
            return _decode(engine, prompt, tokens, probe)
        hog = start_hog(duty)
        try:
            time.sleep(0.1)  # the hog is spinning before the decode starts
            return _decode(engine, prompt, tokens, probe)
        finally:
            stop_hog(hog)
    return arm


def noise_floor(quiet: list[float]) -> float | None:
    """The slowest quiet repeat against the median of the others (None: under 3 repeats)."""
    if len(quiet) < 3:
        return None
    return min(x / statistics.median(quiet[:i] + quiet[i + 1:]) for i, x in enumerate(quiet))


def calibrate(quiet: list[float], by_duty: dict[float, list[dict[str, float | None]]]
              ) -> dict[str, Any]:
    """The record: the quiet noise floor, each duty's slowdown and load, and the thresholds
    they suggest (see the module docstring)."""
    floor = noise_floor(quiet)
    mid = statistics.median(quiet)
    rows = []
    for duty, runs in by_duty.items():
        speeds = [float(r["tokens_per_s"] or 0.0) for r in runs]
        loads = [r["foreign_load"] for r in runs if r["foreign_load"] is not None]
        rows.append({"duty": duty, "slowdown": statistics.median(speeds) / mid,
                     "foreign_load": statistics.median(loads) if loads else None,
                     "tokens_per_s": speeds})
    beyond = [r["foreign_load"] for r in rows if floor is not None
              and r["foreign_load"] is not None and r["slowdown"] < floor]
    return {
        "quiet_tokens_per_s": quiet,
        "noise_floor": floor,
        "suggested_slow_vs_condition": (math.floor(round((floor - MARGIN) * 20, 9)) / 20
                                        if floor is not None else None),
        "slowdown_by_duty": rows,
        "suggested_disturbed_load": min(beyond) if beyond else None,
        "hog": f"one process busy for duty x {PERIOD_S * 1e3:g} ms of every "
               f"{PERIOD_S * 1e3:g} ms",
    }


def run(ctx: Context) -> Section:
    section = Section("disturbance")
    duties = QUICK_DUTIES if ctx.quick else DUTIES
    repeats = max(ctx.repeats, 3)
    probe = LoadProbe()
    with Engine(ctx.target_path, None, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        text = load_prompt(PROMPTS / f"{PLAIN_PROMPT}.txt").text
        prompt = engine.format_prompt(text, chat_template=False)
        engine.run(prompt, parse_strategy("plain"), min(ctx.tokens, 16))  # warm-up
        arms = {0.0: _arm(engine, prompt, ctx.tokens, probe, 0.0)}
        arms.update({d: _arm(engine, prompt, ctx.tokens, probe, d) for d in duties})
        names = list(arms)
        out: dict[float, list[dict[str, float | None]]] = {d: [] for d in names}
        for r in range(repeats):
            shift = r % len(names)
            for duty in names[shift:] + names[:shift]:
                out[duty].append(arms[duty]())
                ctx.log(f"repeat {r + 1}/{repeats} duty {duty:.0%}: "
                        f"{out[duty][-1]['tokens_per_s']:.1f} tok/s")
    quiet_runs = out.pop(0.0)
    quiet = [float(r["tokens_per_s"] or 0.0) for r in quiet_runs]
    record = calibrate(quiet, out)
    # What a quiet machine reads as foreign load here: the floor under any load threshold.
    quiet_loads = [r["foreign_load"] for r in quiet_runs if r["foreign_load"] is not None]
    record["quiet_foreign_load"] = statistics.median(quiet_loads) if quiet_loads else None
    section.info = {"target": ctx.target_name, "tokens": ctx.tokens, "threads": ctx.threads,
                    "repeats": repeats, "calibration": record}
    floor = record["noise_floor"]
    for row in record["slowdown_by_duty"]:
        load = row["foreign_load"]
        section.rows.append(BenchRow(
            section="disturbance", item=f"plain decode, hog at {row['duty']:.0%} of one core",
            phase=row["slowdown"], reference=floor, reference_name="quiet noise floor",
            unit="x quiet tok/s", ratio=row["slowdown"] / floor if floor else None,
            detail=(f"foreign load {load:.1%}" if load is not None else "load not measured")
            + (f"; quiet floor {floor:.2f}x" if floor is not None else ""),
            samples={"tokens_per_s": row["tokens_per_s"], "quiet_tokens_per_s": quiet},
        ))
    return section

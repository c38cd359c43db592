"""profile (blocking; physics: warning): the cost profile agrees with its own blocks, its
units and physics.

The cost model, the note's predictions and `auto`'s choices during the campaign rest on the
profile (phase.results.costs), so what it records is recomputed, never trusted:

- each pass's `ms` is the median of its `block_ms`, `ms_spread` their (max - min) / median,
  one block per `blocks`; likewise each sensor's `energy_j` and `energy_spread` from
  `block_energy_j`, for declared sensors only, one value per block; where the profile judged
  its blocks (schema 12), `block_disturbed` is what their times and loads make it against
  the profile's thresholds (phase.costmodel.blocks), the medians are over the undisturbed
  blocks only (the ones `auto` chose from), and repeated blocks may add to `blocks`; a pass
  every block of which was disturbed is a warning (its cost rests on them);
- units: every block lasted at least `min_block_s` (block_ms x block_passes; a block timed in
  seconds, or a minimum in ms, fails), and a pass's energy over its time is a power within
  its sensor's bounds (plausibility's bound, frozen's floor: joules in mJ or kJ fail);
- each point is a campaign prompt's mid-run fill (its runs' prompt tokens plus half the
  generated tokens), with one pass per size;
- physics: at one fill, a pass over more tokens, computing at least as many logits rows, does
  all the work of the smaller pass and more, so it is never cheaper than the smallest such
  pass (the one-token pass for the target) beyond the noise both state (their spreads, plus
  1%). Only that is required: between larger sizes llama.cpp switches matmul kernels, so a
  larger pass can really be the cheaper (bench/results/notes-from-docstrings.md has one
  host's case). A breach is a warning: it is what a host that slowed down mid-profile
  records, not a forged file.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence

from phase.costmodel.blocks import clean, disturbed_blocks
from phase.results import PassCost, ProfilePoint, ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding, Severity
from phase.validate.settings import RuleSettings

_REL = 1e-9  # float round-off between the profiler's arithmetic and the recomputation
# Noise a pass states nothing about beyond its spread (one block states none).
_NOISE_FLOOR = 0.01

Problem = tuple[str, str, dict[str, float]]  # message, JSON path under $.profile, numbers


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    profile = results.profile
    if profile is None:
        return []
    problems: list[Problem] = []
    physics: list[Problem] = []
    for pi, point in enumerate(profile.points):
        problems += _fill(results, point, pi)
        for role in ("target", "draft"):
            passes: list[PassCost] = getattr(point, role)
            sizes = [c.tokens for c in passes]
            for ci, cost in enumerate(passes):
                where = f"points[{pi}].{role}[{ci}]"
                if sizes.count(cost.tokens) > 1:
                    problems.append((f"{role} pass of {cost.tokens} tokens is profiled twice at "
                                     f"fill {point.kv_tokens}", f"{where}.tokens", {}))
                problems += _blocks(results, cost, where)
                if cost.block_disturbed and all(cost.block_disturbed):
                    physics.append((f"the {cost.tokens}-token {role} pass at fill "
                                    f"{point.kv_tokens}: every one of its "
                                    f"{len(cost.block_ms)} blocks was disturbed, so its cost "
                                    "(and what auto chose with it) rests on them",
                                    f"{where}.block_disturbed",
                                    {"blocks": len(cost.block_ms)}))
                problems += _units(results, settings, cost, where)
            physics += _physics(point, role, passes, pi)
    # A profile at odds with its own blocks or units was not recorded as measured: blocking.
    # One at odds with physics was measured on a host that changed speed beyond the noise its
    # blocks state (a shared machine does): its predictions cannot be trusted, said as a
    # warning, while the runs themselves stand.
    ranked: tuple[tuple[Severity, list[Problem]], ...] = (("blocking", problems),
                                                           ("warning", physics))
    return [ctx.finding("profile", severity, f"cost profile: {message}", numbers=numbers,
                        json_path=f"$.profile.{path}")
            for severity, found in ranked
            for message, path, numbers in found]


def _spread(values: Sequence[float]) -> float | None:
    """As the profiler computes it: (max - min) / median; None for one value or median 0."""
    if len(values) < 2:
        return None
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid > 0 else None


def _differs(recorded: float | None, expected: float | None) -> bool:
    if recorded is None or expected is None:
        return recorded is not expected
    return not math.isclose(recorded, expected, rel_tol=_REL, abs_tol=1e-12)


def _judged(results: ResultsFile, cost: PassCost, where: str
            ) -> tuple[list[bool], list[Problem]]:
    """The blocks other work disturbed, re-derived from their times and loads with the
    profile's own thresholds (phase.costmodel.blocks), and what the record says otherwise."""
    profile = results.profile
    assert profile is not None
    judged = profile.disturbed_load is not None or profile.slow_floor is not None
    if not judged:
        if cost.block_disturbed and any(cost.block_disturbed):
            return [False] * len(cost.block_ms), [(
                f"the {cost.tokens}-token pass at {where} marks blocks disturbed, but the "
                "profile records no threshold that judges them", f"{where}.block_disturbed",
                {})]
        return [False] * len(cost.block_ms), []
    bad = disturbed_blocks(cost.block_ms, cost.block_load, profile.disturbed_load,
                           profile.slow_floor)
    if cost.block_disturbed != bad:
        return bad, [(f"the {cost.tokens}-token pass at {where} marks blocks disturbed "
                      f"{cost.block_disturbed}, but their times and loads against the "
                      f"profile's thresholds make them {bad}", f"{where}.block_disturbed",
                      {"disturbed": bad.count(True)})]
    return bad, []


def _blocks(results: ResultsFile, cost: PassCost, where: str) -> Iterator[Problem]:
    profile = results.profile
    assert profile is not None
    what = f"the {cost.tokens}-token pass at {where}"
    bad, problems = _judged(results, cost, where)
    yield from problems
    # A judged pass may have run retry blocks (some of which later judgements cleared).
    retried = bool(cost.block_disturbed) and len(cost.block_ms) > profile.blocks
    if len(cost.block_ms) != profile.blocks and not retried:
        yield (f"{what} has {len(cost.block_ms)} blocks; the profile times {profile.blocks}",
               f"{where}.block_ms", {"blocks": len(cost.block_ms)})
    kept = clean(cost.block_ms, bad)
    median = statistics.median(kept)
    if _differs(cost.ms, median):
        yield (f"{what} records {cost.ms:.6g} ms, but the median of its undisturbed blocks "
               f"is {median:.6g} ms", f"{where}.ms", {"ms": cost.ms, "median_ms": median})
    if _differs(cost.ms_spread, _spread(kept)):
        yield (f"{what} records a spread of {cost.ms_spread}, but its undisturbed blocks' "
               f"(max - min) / median is {_spread(kept)}", f"{where}.ms_spread", {})
    declared = {s.name for s in results.sensors}
    for name in sorted({*cost.energy_j, *cost.block_energy_j, *cost.energy_spread}):
        blocks = cost.block_energy_j.get(name)
        if name not in declared:
            yield (f"{what} has energy from {name!r}, which $.sensors does not declare",
                   f"{where}.energy_j", {})
        elif blocks is None or len(blocks) != len(cost.block_ms):
            yield (f"{what}: {name!r} has {0 if blocks is None else len(blocks)} block energies "
                   f"for {len(cost.block_ms)} blocks (a sensor counts only where it read every "
                   "block)", f"{where}.block_energy_j", {})
        elif _differs(cost.energy_j.get(name), statistics.median(clean(blocks, bad))):
            median = statistics.median(clean(blocks, bad))
            yield (f"{what}: {name!r} records {cost.energy_j.get(name)} J per pass, but the "
                   f"median of its undisturbed blocks is {median:.6g} J",
                   f"{where}.energy_j", {"median_j": median})
        elif _differs(cost.energy_spread.get(name), _spread(clean(blocks, bad))):
            yield (f"{what}: {name!r} records an energy spread of "
                   f"{cost.energy_spread.get(name)}, but its undisturbed blocks give "
                   f"{_spread(clean(blocks, bad))}", f"{where}.energy_spread", {})


def _units(results: ResultsFile, settings: RuleSettings, cost: PassCost,
           where: str) -> Iterator[Problem]:
    profile = results.profile
    assert profile is not None
    what = f"the {cost.tokens}-token pass at {where}"
    for k, (ms, passes) in enumerate(zip(cost.block_ms, cost.block_passes, strict=False)):
        lasted = ms * passes / 1e3
        if lasted < profile.min_block_s * (1 - 1e-6):
            yield (f"{what}: block {k} ran {passes} passes of {ms:.6g} ms, {lasted:.6g} s, but a "
                   f"block lasts at least min_block_s ({profile.min_block_s:g} s): a time in the "
                   "wrong unit", f"{where}.block_ms[{k}]",
                   {"block_s": lasted, "min_block_s": profile.min_block_s})
            break
    sensors = {s.name: s for s in results.sensors}
    for name, joules in cost.energy_j.items():
        info = sensors.get(name)
        if info is None or cost.ms <= 0:
            continue
        power = joules / (cost.ms / 1e3)
        high = info.max_power_w if info.max_power_w is not None else settings.max_power_w[
            info.scope]
        low = settings.min_power_w[info.scope]
        if not low <= power <= high:
            yield (f"{what}: {name!r} reads {joules:.6g} J per {cost.ms:.6g} ms pass, "
                   f"{power:.6g} W, outside what a {info.scope} sensor can read "
                   f"({low:g}-{high:g} W): an energy in the wrong unit", f"{where}.energy_j",
                   {"power_w": power, "max_power_w": high, "min_power_w": low})


def _fill(results: ResultsFile, point: ProfilePoint, pi: int) -> Iterator[Problem]:
    if point.prompt is None:
        return
    if point.prompt not in {p.name for p in results.config.prompts}:
        yield (f"point {pi} is profiled at prompt {point.prompt!r}, which $.config.prompts "
               "does not declare", f"points[{pi}].prompt", {})
        return
    lengths = {r.prompt_tokens for r in results.runs if r.prompt == point.prompt}
    if len(lengths) == 1:
        fill = lengths.pop() + results.config.tokens // 2
        if point.kv_tokens != fill:
            yield (f"point {pi} is prompt {point.prompt!r}'s mid-run fill, {fill} tokens (its "
                   f"runs' prompt tokens plus half of {results.config.tokens}), not "
                   f"{point.kv_tokens}", f"points[{pi}].kv_tokens",
                   {"kv_tokens": point.kv_tokens, "expected": fill})


def _logits(cost: PassCost) -> int:
    return cost.tokens if cost.logits is None else cost.logits


def _physics(point: ProfilePoint, role: str, passes: list[PassCost],
             pi: int) -> Iterator[Problem]:
    """Each pass against the smallest pass whose work it contains (fewer tokens, no more
    logits rows), in time and in each sensor's energy."""
    for ci, big in enumerate(passes):
        inside = [c for c in passes if c.tokens < big.tokens and _logits(c) <= _logits(big)]
        if not inside:
            continue
        small = min(inside, key=lambda c: c.tokens)
        figures = [("ms", big.ms, small.ms, big.ms_spread, small.ms_spread, "ms")]
        figures += [(f"energy_j.{n}", big.energy_j[n], small.energy_j[n],
                     big.energy_spread.get(n), small.energy_spread.get(n), "J")
                    for n in big.energy_j if n in small.energy_j]
        for field, b, s, b_spread, s_spread, unit in figures:
            noise = (b_spread or 0.0) + (s_spread or 0.0) + _NOISE_FLOOR
            if b >= s * (1 - noise):
                continue
            yield (f"at fill {point.kv_tokens}, the {role}'s {big.tokens}-token pass costs "
                   f"{b:.6g} {unit}, {1 - b / s:.1%} less than its {small.tokens}-token pass "
                   f"({s:.6g} {unit}), whose work it contains, beyond the {noise:.1%} their "
                   "spreads state: a pass over more tokens is never cheaper",
                   f"points[{pi}].{role}[{ci}].{field.split('.')[0]}",
                   {"cost": b, "smaller_pass_cost": s, "noise": noise})


RULE = Rule(order=60, check=check)

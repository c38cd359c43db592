"""`auto` against the fixed strategies, and phase's n-gram strategies against llama.cpp's.

Both sections generate `--spec-tokens` tokens per run (a campaign's length, 384, by default).

auto          On each of the speculative experiment's prompts, chat-formatted as a campaign
              does: plain, draft-k (the bench's ks), ngram and auto take turns in one engine
              (target + draft loaded once), after the engine's cost profile was measured at
              the prompt's mid-run fill, as a campaign measures it (afresh per prompt: a
              shared machine's speed can shift within the section's hour). Each speculative
              strategy also runs "on plain's text" (Engine.run_on_reference): the same
              passes and proposals, every position taking plain's token. Batched
              verification flips an occasional near-tie, and a flipped text may offer more or
              less to copy; a strategy's free-running speed then measures its text as much as
              its choices. Rows: auto against the best fixed strategy (>= 0.98x) and against
              plain (>= 0.97x) per prompt, on plain's text, and free-running where the two
              arms wrote the same text (otherwise shown, not judged, with where each text
              leaves plain's); each of these again, "priced": every arm's runs at the
              profile's costs of its own passes, which the host's speed between runs cannot
              move (a measured miss beside a priced pass is the machine, a priced miss is
              auto's choices); every arm's tokens/s as the cost model predicts it from the
              profile and the arm's own steps (within 10% of the measured), in the row's
              detail at the host's pace that plain's runs nearest in time read, as a
              campaign page shows it, and in the JSON row's "breakdown" each term's ms,
              predicted and measured, and the loop's own ms outside them.
ngram-native  On the edit prompt (chat-formatted text, sent as is to both sides): phase's
              ngram and auto against llama-speculative-simple --spec-type ngram-simple,
              ngram-map-k, ngram-mod and ngram-cache, the draft model with
              --spec-draft-p-min, and llama-lookup. Targets: phase ngram >= 1.0x the best of
              llama.cpp's n-gram types; auto above both, measured, and above phase's
              ngram priced as in the auto section (llama.cpp's passes are not priced).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from bench import native
from bench.common import (
    Context,
    Section,
    alternate,
    check_at_least,
    median,
    ratio,
)
from bench.decode_bench import _common, _pct, _skip_without_native, _values, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.analysis.prediction import TOLERANCE
from phase.campaign.profiling import contexts
from phase.costmodel import CostTable, cost_table
from phase.costmodel.pace import PaceReading, pace_at, plain_pace
from phase.costmodel.predict import measured_terms_ms
from phase.decode import Engine
from phase.decode.profiler import ProfileSettings, choose_contexts
from phase.policy.result import DecodeResult, compare_to_plain
from phase.policy.strategies import decides, is_baseline, parse_strategy, run_terms
from phase.results import CostProfile

PROMPTS = ("code", "prose", "edit")
EDIT = "edit"
AUTO_VS_BEST = 0.98
AUTO_VS_PLAIN = 0.97
NGRAM_VS_NATIVE = 1.0
P_MIN = 0.75  # --spec-draft-p-min for the draft model: llama.cpp's server default
P_MIN_K = 16
ON_PLAIN = " on plain's text"  # arms that follow plain's output (Engine.run_on_reference)


def _record(r: DecodeResult) -> dict[str, Any]:
    return {"tokens_per_s": r.tokens_per_s, "tokens": len(r.token_ids), "drafted": r.drafted,
            "accepted": r.accepted, "acceptance": r.acceptance, "steps": r.steps,
            "trace": r.trace, "token_ids": r.token_ids, "text": r.text,
            "overridden": r.overridden}


def _engine(ctx: Context) -> Engine:
    return Engine(ctx.target_path, ctx.draft_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads)


def _profile(engine: Engine, ctx: Context,
             prompts: dict[str, list[int]]) -> tuple[CostProfile, dict[str, list[int]]]:
    """The engine's cost profile at the prompts' mid-run fills, measured after a plain
    warm-up run of each (whose tokens are the fills' history), as a campaign does; and those
    plain texts, which the "on plain's text" arms follow."""
    plain = parse_strategy("plain")
    continuations = {name: engine.run(p, plain, ctx.spec_tokens).token_ids
                     for name, p in prompts.items()}
    chosen = choose_contexts(contexts(prompts, continuations, ctx.spec_tokens))
    profile = engine.profile(chosen, ProfileSettings(), energy_reason="the bench reads no sensor")
    engine.use_profile(profile)
    ctx.log(f"cost profile in {profile.wall_s:.1f} s")
    return profile, continuations


def _arm(engine: Engine, prompt: list[int], label: str, tokens: int,
         follow: list[int] | None = None) -> Callable[[], dict[str, Any]]:
    strategy = parse_strategy(label)

    def run(n: int) -> DecodeResult:
        if follow is None:
            return engine.run(prompt, strategy, n)
        return engine.run_on_reference(prompt, strategy, n, follow)

    run(min(tokens, 16))  # warm-up

    def arm() -> dict[str, Any]:
        started = time.time()
        record = _record(run(tokens))
        # The run's midpoint: the host's pace then is read from plain's runs around it.
        return record | {"at_s": (started + time.time()) / 2}

    return arm


def _pace_readings(plain_runs: list[dict[str, Any]], table: CostTable) -> list[PaceReading]:
    """The host's pace as each plain run read it (phase.costmodel.pace), keyed by its time."""
    readings = []
    for r in plain_runs:
        pace = plain_pace(r["trace"], table)
        if pace is not None:
            readings.append(PaceReading(r["at_s"], pace, r["at_s"]))
    return readings


def _priced(runs: list[dict[str, Any]], strategy: str, table: CostTable) -> list[float]:
    """Each run's tokens/s as the profile prices its own steps (phase.costmodel.predict): what
    its choices are worth, with the host's speed from run to run left out. Greedy repeats take
    the same steps, so repeats price alike, however much the machine's speed moved."""
    return [r["tokens"] / (run_terms(r["trace"], strategy, table).total / 1e3) for r in runs]


def _terms(runs: list[dict[str, Any]], strategy: str,
           table: CostTable) -> dict[str, list[float]]:
    """Per run, the cost model's terms beside the trace's (ms): which term a miss is in. The
    loop's own time (decode time outside every timed pass and proposal) is the remainder."""
    out: dict[str, list[float]] = {}
    for r in runs:
        predicted = run_terms(r["trace"], strategy, table)
        measured = measured_terms_ms(r["trace"])
        decode_ms = 1e3 * r["tokens"] / r["tokens_per_s"]
        for key, value in (("target ms, predicted", predicted.target),
                           ("target ms, measured", measured.target),
                           ("propose ms, predicted", predicted.propose),
                           ("propose ms, measured", measured.propose),
                           ("loop ms, measured", decode_ms - measured.total)):
            out.setdefault(key, []).append(value)
    return out


def _prediction_row(section: Section, prompt_name: str, label: str, runs: list[dict[str, Any]],
                    predicted: list[float], readings: list[PaceReading],
                    table: CostTable) -> None:
    """Predicted (`predicted`: the runs as the profile prices them) vs measured tokens/s, as a
    campaign page predicts them; the detail adds the prediction at the pace that the plain
    runs nearest in time read (never the run's own), and the row's breakdown each term's ms."""
    paces = [pace_at(readings, r["at_s"], exclude=r["at_s"]) for r in runs]
    paced = [u / q for u, q in zip(predicted, paces, strict=True) if q]
    p, m = median(predicted), median(_values(runs, "tokens_per_s"))
    r = ratio(p, m)
    detail = "cost model: profile + this arm's own steps"
    if len(paced) == len(runs):
        detail += (f"; at the host's pace (x{median([q for q in paces if q]) or 0:.2f}): "
                   f"{ratio(median(paced), m) or 0:.3f}")
    section.rows.append(BenchRow(
        section.name, f"{prompt_name} {label} predicted", p, m, "measured", "tok/s", r,
        f"within {TOLERANCE:.0%}", None if r is None else abs(r - 1) <= TOLERANCE, detail,
        {"predicted": predicted, "measured": _values(runs, "tokens_per_s"),
         "at the host's pace": paced, "pace": paces},
        _terms(runs, label.removesuffix(ON_PLAIN), table)))


def _leaves(runs: list[dict[str, Any]], plain_text: list[int]) -> int | None:
    """Where an arm's text leaves plain's (None: it does not); repeats write one text."""
    return compare_to_plain(runs[0]["token_ids"], plain_text)[1]


def _where(leaves: int | None) -> str:
    return "same as plain's" if leaves is None else f"leaves plain's at token {leaves}"


def _versus(section: Section, name: str, runs: dict[str, list[dict[str, Any]]],
            arm: str, others: list[str], target: float, plain_text: list[int],
            suffix: str = "", priced: dict[str, list[float]] | None = None) -> None:
    """A row: `arm` against the fastest of `others` (medians of measured tokens/s, or with
    `priced`, of each run as the profile prices its own steps). Free-running arms are judged
    only where both wrote the same text: batched verification can flip a near-tie that a
    one-token pass would not, and speeds of two different texts compare the texts' luck (one
    copies more than the other), not the strategies. The "on plain's text" arms always share
    a text.

    The priced row is the measured one's twin with the host left out: a measured miss beside
    a priced pass says the strategy chose well and the machine's speed moved between the two
    arms' runs (on a shared 2-core VM, repeats of one arm spread by 15-37%); a priced miss
    says the choices themselves cost speed."""
    figures = priced or {a: _values(runs[a], "tokens_per_s") for a in [arm, *others]}
    speeds = {a: median(figures[a]) for a in [arm, *others]}
    known = {a: v for a, v in speeds.items() if a != arm and v is not None}
    best = max(known, key=lambda a: known[a])
    r = ratio(speeds[arm], known[best])
    detail = (f"{arm} kept {median(_values(runs[arm], 'acceptance')) or 0:.0%} of "
              f"{median(_values(runs[arm], 'drafted'))} proposed tokens")
    if priced is not None:
        detail = ("priced: each arm's own passes at the profile's costs, the host's speed "
                  "between runs left out; " + detail)
    passed = check_at_least(r, target)
    if suffix:
        overridden = median(_values(runs[arm], "overridden"))
        detail += f"; plain's text overrode the target's argmax at {overridden} positions"
    elif runs[arm][0]["token_ids"] != runs[best][0]["token_ids"]:
        passed = None
        where = [f"{a}: {_where(_leaves(runs[a], plain_text))}" for a in (arm, best)
                 if not is_baseline(a)]
        detail += f"; not judged, the texts differ ({', '.join(where)}): see{ON_PLAIN}"
    label = arm.removesuffix(ON_PLAIN)
    vs = "best fixed" if len(others) > 1 else best.removesuffix(ON_PLAIN)
    how = ", priced" if priced is not None else ""
    section.rows.append(BenchRow(
        "auto", f"{name} {label} vs {vs}{suffix}{how}", speeds[arm], known[best],
        best.removesuffix(ON_PLAIN), "tok/s", r, f">= {target:.2f}x", passed, detail,
        {arm: figures[arm], best: figures[best]}))


def run_auto(ctx: Context) -> Section:
    section = Section("auto")
    labels = ["plain", *(f"draft-{k}" for k in ctx.ks), "ngram", "auto"]
    following = [f"{label}{ON_PLAIN}" for label in labels if not is_baseline(label)]
    with _engine(ctx) as engine:
        prompts = {name: engine.format_prompt(prompt_text(name)) for name in PROMPTS}
        profile_s: dict[str, float] = {}
        section.info = {"target": ctx.target_name, "draft": ctx.draft_name,
                        "chat_template": True, "arms": [*labels, *following],
                        "profile_s": profile_s,
                        "prompt_tokens": {n: len(p) for n, p in prompts.items()}}
        for name, prompt in prompts.items():
            ctx.log(f"prompt {name}")
            # Profiled afresh before each prompt's arms: a shared machine's speed can shift
            # within the hour this section takes, and a stale profile would misprice every
            # prediction (and auto's choices) after the shift.
            profile, plain_texts = _profile(engine, ctx, {name: prompt})
            profile_s[name] = profile.wall_s
            text = plain_texts[name]
            arms = {label: _arm(engine, prompt, label, ctx.spec_tokens) for label in labels}
            arms |= {f"{label}{ON_PLAIN}": _arm(engine, prompt, label, ctx.spec_tokens, text)
                     for label in labels if not is_baseline(label)}
            runs = alternate(ctx.repeats, arms, ctx.log)
            runs["plain" + ON_PLAIN] = runs["plain"]  # plain's own text, by definition
            table = cost_table(profile, len(prompt) + ctx.spec_tokens // 2)
            priced = {label: _priced(r, label.removesuffix(ON_PLAIN), table)
                      for label, r in runs.items()}
            fixed = [label for label in labels if not decides(label)]
            for arm, others, target in (
                    ("auto", fixed, AUTO_VS_BEST),
                    ("auto" + ON_PLAIN, [f + ON_PLAIN for f in fixed], AUTO_VS_BEST),
                    ("auto", ["plain"], AUTO_VS_PLAIN),
                    ("auto" + ON_PLAIN, ["plain" + ON_PLAIN], AUTO_VS_PLAIN)):
                suffix = ON_PLAIN if arm.endswith(ON_PLAIN) else ""
                _versus(section, name, runs, arm, others, target, text, suffix)
                _versus(section, name, runs, arm, others, target, text, suffix, priced)
            readings = _pace_readings(runs["plain"], table)
            for label in [*labels, *following]:
                _prediction_row(section, name, label, runs[label], priced[label], readings,
                                table)
    return section


def _native_arms(ctx: Context, text: str) -> dict[str, Callable[[], dict[str, Any]]]:
    common = dataclasses.replace(_common(ctx), tokens=ctx.spec_tokens)
    bin_path = ctx.native_bin
    assert bin_path is not None
    counter = iter(range(1_000_000))
    arms: dict[str, Callable[[], dict[str, Any]]] = {
        t: (lambda t=t: native.speculative_ngram(bin_path, ctx.target_path, text, t, common))
        for t in native.NGRAM_SPEC_TYPES
    }
    arms["llama-lookup"] = lambda: native.lookup(
        bin_path, ctx.target_path, text, 8, common, ctx.workdir / f"lookup-{next(counter)}.bin")
    arms["draft p-min"] = lambda: native.speculative_p_min(
        bin_path, ctx.target_path, ctx.draft_path, text, P_MIN_K, P_MIN, common)
    return arms


def _check_flags(ctx: Context) -> None:
    assert ctx.native_bin is not None
    text = native.help_text(ctx.native_bin, "llama-speculative-simple")
    missing = [f for f in ("--spec-type", "--spec-draft-p-min", *native.NGRAM_SPEC_TYPES)
               if f not in text]
    if missing:
        raise native.NativeError(f"this llama.cpp build lacks {', '.join(missing)}")


def run_ngram_native(ctx: Context) -> Section:
    """The ngram-native section. Long because phase's and llama.cpp's n-gram runs alternate
    in one loop and their rows read the same locals; a benchmark script, run only by hand
    (bench/run.py), so it is kept as measured rather than split untested."""
    section = Section("ngram-native")
    if _skip_without_native(ctx, section):
        return section
    _check_flags(ctx)
    with _engine(ctx) as engine:
        # The chat-formatted prompt as text, so both sides tokenize the same string.
        text = engine.detokenize(engine.format_prompt(prompt_text(EDIT)))
        prompt = engine.format_prompt(text, chat_template=False)
        profile, _ = _profile(engine, ctx, {EDIT: prompt})
        arms = {"phase ngram": _arm(engine, prompt, "ngram", ctx.spec_tokens),
                "phase auto": _arm(engine, prompt, "auto", ctx.spec_tokens),
                **_native_arms(ctx, text)}
        runs = alternate(ctx.repeats, arms, ctx.log)
    speeds = {k: median(_values(v, "tokens_per_s")) for k, v in runs.items()}
    section.info = {"prompt": EDIT, "chat_template": "formatted, then sent as text",
                    "phase_prompt_tokens": len(prompt),
                    "native_prompt_tokens": runs["ngram-simple"][0]["prompt_tokens"],
                    "drafted": {k: median(_values(v, "drafted")) for k, v in runs.items()},
                    "acceptance": {k: median(_values(v, "acceptance")) for k, v in runs.items()},
                    "p_min": P_MIN, "p_min_k": P_MIN_K}
    ngram_types = [*native.NGRAM_SPEC_TYPES, "llama-lookup"]
    best = max((t for t in ngram_types if speeds.get(t)), key=lambda t: speeds[t] or 0.0)
    samples = {k: _values(v, "tokens_per_s") for k, v in runs.items()}
    for phase_arm, target in (("phase ngram", NGRAM_VS_NATIVE), ("phase auto", None)):
        r = ratio(speeds[phase_arm], speeds[best])
        limit = target if target is not None else 1.0
        section.rows.append(BenchRow(
            "ngram-native", f"{phase_arm} vs best llama.cpp n-gram", speeds[phase_arm],
            speeds[best], best, "tok/s", r,
            f">= {limit:.2f}x" if target is not None else "> 1.00x",
            check_at_least(r, limit) if target is not None else (None if r is None else r > 1),
            f"acceptance {_pct(section.info['acceptance'][phase_arm])} vs "
            f"{_pct(section.info['acceptance'][best])}",
            {phase_arm: samples[phase_arm], best: samples[best]}))
    r = ratio(speeds["phase auto"], speeds["phase ngram"])
    section.rows.append(BenchRow(
        "ngram-native", "phase auto vs phase ngram", speeds["phase auto"],
        speeds["phase ngram"], "phase ngram", "tok/s", r, "> 1.00x",
        None if r is None else r > 1, "",
        {"phase auto": samples["phase auto"], "phase ngram": samples["phase ngram"]}))
    # The same comparison with the host left out (see _versus): llama.cpp's arms run in
    # another process, whose passes the profile does not price, so only phase's pair has it.
    table = cost_table(profile, len(prompt) + ctx.spec_tokens // 2)
    priced = {arm: _priced(runs[arm], strategy, table)
              for arm, strategy in (("phase auto", "auto"), ("phase ngram", "ngram"))}
    r = ratio(median(priced["phase auto"]), median(priced["phase ngram"]))
    texts_differ = runs["phase auto"][0]["token_ids"] != runs["phase ngram"][0]["token_ids"]
    section.rows.append(BenchRow(
        "ngram-native", "phase auto vs phase ngram, priced", median(priced["phase auto"]),
        median(priced["phase ngram"]), "phase ngram", "tok/s", r, "> 1.00x",
        None if r is None or texts_differ else r > 1,
        "priced: each arm's own passes at the profile's costs, the host's speed between runs "
        "left out" + ("; not judged, the two texts differ" if texts_differ else ""),
        priced))
    for name in (*native.NGRAM_SPEC_TYPES, "llama-lookup", "draft p-min"):
        section.rows.append(BenchRow(
            "ngram-native", f"phase ngram vs {name}", speeds["phase ngram"], speeds[name], name,
            "tok/s", ratio(speeds["phase ngram"], speeds[name]), None, None,
            f"drafted {section.info['drafted'][name]}, kept "
            f"{_pct(section.info['acceptance'][name])}",
            {"phase ngram": samples["phase ngram"], name: samples[name]}))
    return section

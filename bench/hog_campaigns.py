"""Disturbance, shown on real campaigns: two quiet ones, one with a CPU hog during its cost
profile, one with a hog during its runs; then what each judged and how far their ratios moved.

    .venv/bin/python -m bench.hog_campaigns --out /tmp/hog [--tokens 64] [--repeats 3]

Each campaign is `phase measure speculative` with the same small plan (the edit and code
prompts; plain, ngram, draft-4 and auto), written under --out (never results/: these are
demonstrations, not studies). The hog is bench.disturbance_bench's: one process keeping one
core busy (duty 1.0).

    profile hog   started when the campaign says its profile starts, stopped after --profile-hog-s
                  seconds or once its cost profile is in the file, whichever comes first: the
                  profile's blocks it hit must be marked and repeated, and `auto`
                  must choose as it does in a quiet campaign
    runs hog      started once the profile is in the file, kept on for --hog-s seconds: every
                  run it slowed beyond the noise floor must be marked and re-run, and the
                  campaign's ratios must agree with a quiet one's within the noise of two
                  quiet campaigns

A campaign already complete under --out is kept: a second call measures only what is missing.
Prints a Markdown report (and writes it to --report when given). Run it on a quiet machine:
the quiet campaigns are the yardstick.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench.disturbance_bench import start_hog, stop_hog
from phase.analysis import summarize
from phase.analysis.figures import row_value
from phase.campaign.profiling import summary_line
from phase.policy.strategies import decides, is_baseline, proposes_nothing
from phase.results import ResultsFile, load_raw
from phase.validate import validate_results

PROMPTS = "edit,code"
STRATEGIES = "plain,ngram,draft-4,auto"
PROFILE_STARTS = "cost profile: timing"  # what `phase measure` prints as its profile begins


def _campaign(out: Path, tokens: int, repeats: int) -> subprocess.Popen[bytes]:
    # Its terminal output, unbuffered: the profile hog starts when it says the profile starts.
    log = out.with_suffix(".log").open("wb")
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("phase")), "measure", "speculative", "-o", str(out),
         "--prompts", PROMPTS, "--strategies", STRATEGIES, "--tokens", str(tokens),
         "--repeats", str(repeats)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _has_profile(path: Path) -> bool:
    try:
        return load_raw(path).profile is not None
    except Exception:  # not written yet, or mid-write: poll again
        return False


def _wait_profile_start(path: Path, proc: subprocess.Popen[bytes]) -> None:
    log = path.with_suffix(".log")
    while proc.poll() is None and PROFILE_STARTS not in log.read_text(errors="replace"):
        time.sleep(0.2)


def _wait_profile(path: Path, proc: subprocess.Popen[bytes],
                  limit_s: float = float("inf")) -> None:
    deadline = time.monotonic() + limit_s
    while proc.poll() is None and not _has_profile(path) and time.monotonic() < deadline:
        time.sleep(0.5)


def _complete(path: Path) -> bool:
    try:
        return load_raw(path).status == "complete"
    except Exception:  # absent or unreadable: measure it
        return False


def run(out: Path, name: str, tokens: int, repeats: int, hog: str | None, hog_s: float,
        profile_hog_s: float) -> Path:
    path = out / f"{name}.json"
    if _complete(path):  # a finished campaign of an earlier call is kept, not measured again
        return path
    proc = _campaign(path, tokens, repeats)
    hog_proc = None
    try:
        if hog == "profile":
            # For part of the profile, as other work comes and goes: blocks measured after
            # it stops are the clean repeats the hit blocks must be replaced by.
            _wait_profile_start(path, proc)
            hog_proc = start_hog(1.0)
            _wait_profile(path, proc, profile_hog_s)
        elif hog == "runs":
            _wait_profile(path, proc)
            hog_proc = start_hog(1.0)
            deadline = time.monotonic() + hog_s
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
    finally:  # never leave a hog spinning, whatever stopped us
        if hog_proc is not None:
            stop_hog(hog_proc)
    if proc.wait() != 0:
        raise SystemExit(f"campaign {name} failed (exit {proc.returncode}): see "
                         f"{path.with_suffix('.log')}")
    return path


def _ratios(raw: ResultsFile, name: str) -> dict[tuple[str, str], float]:
    summary = summarize(raw, validate_results(raw, name), name)
    return {(r.prompt, r.strategy): v for r in summary.rows if not is_baseline(r.strategy)
            if (v := row_value("speed_vs_plain", summary.rows, r)) is not None}


def _auto_choices(raw: ResultsFile) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for run in raw.runs:
        if decides(run.strategy) and not run.disturbed:
            counts = out.setdefault(run.prompt, Counter())
            counts.update(f"{s.proposer}-{s.proposed}" if not proposes_nothing(s.proposer)
                          else "none"
                          for s in run.trace)
    return out


def _profile_blocks(raw: ResultsFile) -> tuple[int, int]:
    assert raw.profile is not None
    passes = [c for p in raw.profile.points for c in [*p.target, *p.draft]]
    marked = sum(sum(c.block_disturbed) for c in passes)
    return marked, sum(len(c.block_ms) for c in passes)


def _most_hit(raw: ResultsFile) -> str:
    """The profiled pass whose disturbed blocks ran slowest against the price it kept (the
    median of its undisturbed blocks): what `auto` would have decided with without them."""
    assert raw.profile is not None
    worst, text = 1.0, "none"
    for point in raw.profile.points:
        for role, costs in (("target", point.target), ("draft", point.draft)):
            for c in costs:
                hit = [ms for ms, bad in zip(c.block_ms, c.block_disturbed, strict=True) if bad]
                if hit and c.ms > 0 and max(hit) / c.ms > worst:
                    worst = max(hit) / c.ms
                    text = (f"{role} {c.tokens}-token pass at KV {point.kv_tokens}: a "
                            f"disturbed block {max(hit):.1f} ms, {worst:.1f}x the {c.ms:.1f} ms "
                            "kept")
    return text


def report(paths: dict[str, Path]) -> str:
    raw = {k: load_raw(p) for k, p in paths.items()}
    lines = ["# Disturbance on real campaigns", ""]
    a, b = _ratios(raw["quiet-a"], "a"), _ratios(raw["quiet-b"], "b")
    noise = {k: abs(a[k] / b[k] - 1) for k in a if k in b}
    lines += ["| campaign | runs | disturbed (re-run) | profile blocks marked |",
              "|---|---|---|---|"]
    for name, r in raw.items():
        marked, blocks = _profile_blocks(r)
        lines.append(f"| {name} | {len(r.runs)} | {sum(x.disturbed for x in r.runs)} | "
                     f"{marked} of {blocks} |")
    lines += ["", "The cost profile's prices `auto` decides with, as each campaign kept them "
              "(median of the undisturbed blocks), and the pass whose disturbed blocks ran "
              "slowest against that price:",
              "", "| campaign | profile | most disturbed pass |", "|---|---|---|"]
    for name, r in raw.items():
        assert r.profile is not None
        lines.append(f"| {name} | {summary_line(r.profile)} | {_most_hit(r)} |")
    lines += ["", "Disturbed runs and why:", ""]
    for name, r in raw.items():
        for x in r.runs:
            if x.disturbed:
                lines.append(f"- {name} {x.id}: {x.disturbed_reason or x.foreign_load_reason}")
    lines += ["", "| condition | quiet A | quiet B | profile hog | runs hog | "
              "\\|A/B−1\\| (noise) | \\|runs hog/A−1\\| |", "|---|---|---|---|---|---|---|"]
    hp, hr = _ratios(raw["profile-hog"], "p"), _ratios(raw["runs-hog"], "r")
    for key in sorted(a):
        lines.append(f"| {key[0]} × {key[1]} | {a[key]:.3f} | {b.get(key, float('nan')):.3f} | "
                     f"{hp.get(key, float('nan')):.3f} | {hr.get(key, float('nan')):.3f} | "
                     f"{noise.get(key, float('nan')):.1%} | "
                     f"{abs(hr[key] / a[key] - 1) if key in hr else float('nan'):.1%} |")
    lines += ["", "`auto`'s choices (proposer-k: steps), undisturbed runs:", ""]
    for name in ("quiet-a", "profile-hog"):
        for prompt, counts in sorted(_auto_choices(raw[name]).items()):
            lines.append(f"- {name}, {prompt}: " + ", ".join(
                f"{c} {n}" for c, n in counts.most_common()))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--hog-s", type=float, default=60.0,
                   help="how long the runs hog stays on once the profile is written")
    p.add_argument("--profile-hog-s", type=float, default=20.0,
                   help="the profile hog's time from the campaign's start (or to the profile)")
    p.add_argument("--report", type=Path)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, hog in (("quiet-a", None), ("profile-hog", "profile"), ("runs-hog", "runs"),
                      ("quiet-b", None)):
        print(f"[{name}]", file=sys.stderr, flush=True)
        paths[name] = run(args.out, name, args.tokens, args.repeats, hog, args.hog_s,
                          args.profile_hog_s)
    text = report(paths)
    print(text)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

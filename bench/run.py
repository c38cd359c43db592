"""phase benchmarks: speed against native llama.cpp, and the overheads phase adds.

    .venv/bin/python -m bench.run
        [--only plain,draft,ngram,auto,ngram-native,selfdraft,evidence,noise,sampler,
                sampling,sampling-native,windows,bandwidth,tg-bandwidth,stream,site,hosts,
                adaptive,coverage,disturbance]
        [--repeats N] [--tokens N] [--spec-tokens N] [--model NAME] [--draft NAME]
        [--threads T] [--quick] [--out DIR] [--strict]

Sections (each its own module): plain, draft and ngram (bench/decode_bench.py, against the
native tools built by bench/native.py), auto and ngram-native (bench/spec_bench.py: auto vs
the fixed strategies with the cost model's predictions; phase's n-gram strategies vs
llama.cpp's), selfdraft (bench/self_draft.py: the target as its own draft, phase's acceptance
>= llama-speculative-simple's), evidence (bench/evidence_bench.py: what recording the top-2
logit gaps costs), noise (bench/batch_noise.py: how far one-token and batched passes move a
greedy choice, against the validator's near_tie_gap), sampler (bench/sampler_bench.py),
sampling (bench/sampling_bench.py: draft-4 acceptance of speculative sampling's rejection rule
against phase's implementations of the two llama.cpp tools' verification rules at three
temperatures), sampling-native (bench/native_sampling.py: the same against the tools'
binaries, llama-speculative and llama-speculative-simple, at the same temperatures),
windows (bench/windows_bench.py: a quiet campaign's wall time with energy windows sized to
the sensor and without),
bandwidth (bench/bandwidth.py), tg-bandwidth (bench/tg_bandwidth.py: phase's plain decoding
and llama-bench's tg as effective bandwidth, tok/s x bytes/token, on the 0.5B model),
stream (bench/bandwidth_bench.py: phase's STREAM-style C kernels against numpy's bare copy
and numpy's triad, and sysbench memory where installed), site
(bench/site_bench.py), hosts (bench/hosts_bench.py: many campaigns over many host classes,
the cross-host page), adaptive (bench/adaptive_bench.py: a short real campaign with adaptive
repeats, how many extra runs it took here to pin every ratio to plain within ±5%), coverage
(bench/coverage_bench.py: by simulation, how often the published ratio intervals hold the true
ratio, the false "resolved" rate, the family-wise rate after correction; no model),
disturbance (bench/disturbance_bench.py: a plain decode's slowdown under a CPU hog at several
duty cycles of one core, and the quiet spread: the calibration the disturbance defaults in
phase/campaign/plan.py cite). Writes
bench/results/<date>-<host>.json and a Markdown table beside it, and prints a table with
PASS/FAIL against the project's targets.
--quick: the small test model (smollm2-135m, also its own draft), 32 tokens, 3 repeats, small
site counts: a smoke run of every section in a few minutes.
The native tools of sampling-native and tg-bandwidth are built once from the llama.cpp that
llama-cpp-python vendors (bench/native_tools.py; minutes), cached under ~/.cache/phase.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SECTIONS = ("plain", "draft", "ngram", "auto", "ngram-native", "selfdraft", "evidence", "noise",
            "sampler", "sampling", "sampling-native", "windows", "bandwidth", "tg-bandwidth",
            "stream", "site", "hosts", "adaptive", "coverage", "disturbance")
NATIVE_SECTIONS = {"plain", "draft", "ngram", "ngram-native", "selfdraft"}
# Sections that run bench/native_tools.py's binaries (llama-speculative among them).
TOOLS_SECTIONS = {"sampling-native", "tg-bandwidth"}
# Sections that load the draft model as well as the target.
DRAFT_SECTIONS = {"draft", "auto", "ngram-native", "selfdraft", "sampling", "sampling-native",
                  "adaptive"}


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from phase.campaign.plan import DEFAULT_PLAN

    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=",".join(SECTIONS),
                   help=f"comma-separated sections (default: all of {','.join(SECTIONS)})")
    p.add_argument("--repeats", type=int, default=None, help="repeats per arm (default 3)")
    p.add_argument("--tokens", type=int, default=None, help="tokens per run (default 128)")
    p.add_argument("--spec-tokens", type=int, default=None,
                   help="tokens per run in the auto and ngram-native sections (default: a "
                   "campaign's run length, 384: what auto and the adaptive ngram length gain "
                   "depends on the run's length, so they are judged at the length a campaign "
                   "measures)")
    p.add_argument("--model", default=None, help="target model (default qwen2.5-coder-1.5b)")
    p.add_argument("--draft", default=None, help="draft model (default qwen2.5-coder-0.5b)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads on both sides (default: physical cores, as llama-bench)")
    p.add_argument("--ctx", type=int, default=4096, help="context size on both sides")
    p.add_argument("--ks", default="2,4,8", help="draft lengths for the draft section")
    p.add_argument("--site-counts", default=None,
                   help="campaign counts for the site section (default 1,10,50; quick 1,3)")
    p.add_argument("--host-counts", default=None,
                   help="campaign counts for the hosts section (default 20,100,200; quick 2,4,6)")
    p.add_argument("--quick", action="store_true",
                   help="small test model as target and draft, 32 tokens, 3 repeats")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results",
                   help="directory for the JSON and Markdown files")
    p.add_argument("--strict", action="store_true", help="exit 1 when any target fails")
    args = p.parse_args(argv)
    args.only = _csv(args.only)
    unknown = [s for s in args.only if s not in SECTIONS]
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    quick = args.quick
    args.model = args.model or ("smollm2-135m" if quick else "qwen2.5-coder-1.5b")
    args.draft = args.draft or (args.model if quick else "qwen2.5-coder-0.5b")
    args.tokens = args.tokens or (32 if quick else 128)
    args.spec_tokens = args.spec_tokens or (32 if quick else DEFAULT_PLAN.tokens)
    args.repeats = args.repeats or 3
    args.site_counts = [int(c) for c in _csv(args.site_counts or ("1,3" if quick else "1,10,50"))]
    args.host_counts = [int(c) for c in _csv(args.host_counts
                                             or ("2,4,6" if quick else "20,100,200"))]
    args.ks = [int(k) for k in _csv(args.ks)]
    for name in ("tokens", "spec_tokens", "repeats", "ctx"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    from bench import (
        adaptive_bench,
        bandwidth,
        bandwidth_bench,
        batch_noise,
        coverage_bench,
        decode_bench,
        disturbance_bench,
        evidence_bench,
        hosts_bench,
        native,
        native_sampling,
        native_tools,
        report,
        sampler_bench,
        sampling_bench,
        self_draft,
        site_bench,
        spec_bench,
        tg_bandwidth,
        windows_bench,
    )
    from bench.common import Context, Section
    from phase.base.errors import PhaseError
    from phase.decode.cores import physical_cores
    from phase.models.sources import resolve

    args = parse_args(argv)
    threads = args.threads or physical_cores()
    print(f"phase bench: {', '.join(args.only)}; target {args.model}, draft {args.draft}, "
          f"{args.tokens} tokens ({args.spec_tokens} for auto and ngram-native), "
          f"{args.repeats} repeats, {threads} threads", file=sys.stderr)

    bin_path, problem, build = None, None, None
    if NATIVE_SECTIONS & set(args.only):
        try:
            bin_path = native.ensure_built(lambda m: print(f"  native: {m}", file=sys.stderr))
            build = native.build_info(bin_path)
        except (native.NativeError, OSError) as exc:
            problem = str(exc)
            print(f"native llama.cpp unavailable: {problem}", file=sys.stderr)

    tools_bin, tools_problem = None, "no section asked for them"
    if TOOLS_SECTIONS & set(args.only):
        try:
            tools_bin = native_tools.ensure_tools(lambda m: print(f"  tools: {m}",
                                                                  file=sys.stderr))
            tools_problem = None
        except (native.NativeError, OSError) as exc:
            tools_problem = str(exc)
            print(f"native llama.cpp tools unavailable: {tools_problem}", file=sys.stderr)

    needs_models = set(args.only) - {"site", "hosts", "stream", "coverage"}
    try:
        target = resolve(args.model) if needs_models else None
        draft = resolve(args.draft) if DRAFT_SECTIONS & set(args.only) else target
    except PhaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    runners = {
        "plain": decode_bench.run_plain, "draft": decode_bench.run_draft,
        "ngram": decode_bench.run_ngram, "auto": spec_bench.run_auto,
        "ngram-native": spec_bench.run_ngram_native, "selfdraft": self_draft.run,
        "evidence": evidence_bench.run, "noise": batch_noise.run, "sampler": sampler_bench.run,
        "sampling": sampling_bench.run, "sampling-native": native_sampling.run,
        "windows": windows_bench.run, "bandwidth": bandwidth.run,
        "tg-bandwidth": tg_bandwidth.run, "stream": bandwidth_bench.run, "site": site_bench.run,
        "hosts": hosts_bench.run,
        "adaptive": adaptive_bench.run, "disturbance": disturbance_bench.run,
        "coverage": coverage_bench.run,
    }
    sections: list[Section] = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="phase-bench-") as tmp:
        ctx = Context(
            repeats=args.repeats, tokens=args.tokens, spec_tokens=args.spec_tokens,
            threads=threads, n_ctx=args.ctx,
            target_name=args.model, draft_name=args.draft,
            target_path=target.path if target else Path(),
            draft_path=draft.path if draft else Path(),
            ks=tuple(args.ks), quick=args.quick, native_bin=bin_path, native_problem=problem,
            workdir=Path(tmp), site_counts=tuple(args.site_counts),
            host_counts=tuple(args.host_counts),
            sampler_hz=(20.0, 100.0), tools_bin=tools_bin, tools_problem=tools_problem,
        )
        for name in SECTIONS:
            if name not in args.only:
                continue
            print(f"[{name}]", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                sections.append(runners[name](ctx))
            except (PhaseError, native.NativeError, OSError, RuntimeError) as exc:
                # One broken section (a tool that crashed, a missing file) must not cost the
                # others' measurements; the reason is recorded in place of its rows.
                print(f"  {name} failed: {exc}", file=sys.stderr)
                sections.append(Section(name, skipped=f"failed: {exc}"))
            print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    data = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": ["bench/run.py", *(argv if argv is not None else sys.argv[1:])],
        "wall_s": time.time() - started,
        "machine": report.machine_info(threads, build,
                                       native_tools.build_label(tools_bin)
                                       if tools_bin is not None else None),
        "config": {"target": args.model, "draft": args.draft, "tokens": args.tokens,
                   "spec_tokens": args.spec_tokens,
                   "repeats": args.repeats, "threads": threads, "n_ctx": args.ctx,
                   "ks": args.ks, "quick": args.quick, "chat_template": False,
                   "site_counts": args.site_counts, "host_counts": args.host_counts,
                   "sections": args.only},
        "sections": [s.as_dict() for s in sections],
        "checks": [{"item": r.item, "target": r.target, "passed": r.passed, "noise": r.noise}
                   for s in sections for r in s.rows if r.target is not None],
    }
    json_path, md_path = report.write(args.out, data, sections)
    print()
    print(report.terminal_table(sections))
    print(f"\nwrote {json_path} and {md_path.name}")
    failed = [c["item"] for c in data["checks"] if c["passed"] is False]
    if failed:
        print(f"FAIL: {', '.join(failed)}")
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

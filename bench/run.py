"""phase benchmarks: speed against native llama.cpp, and the overheads phase adds.

    .venv/bin/python -m bench.run
        [--only SECTION,...] [--list]
        [--repeats N] [--tokens N] [--spec-tokens N] [--model NAME] [--draft NAME]
        [--threads T] [--quick] [--out DIR] [--strict]

The sections, what each measures and the module that runs it are registered once, in
bench/sections.py (`--list` prints them). Writes bench/results/<date>-<host>.json and a
Markdown table beside it, and prints a table with PASS/FAIL against the project's targets.
--quick: the small test model (smollm2-135m, also its own draft), 32 tokens, 3 repeats, small
site counts: a smoke run of every section in a few minutes.
The native tools of sampling-native and tg-bandwidth, and the llama-server of
serving_reference, are built once from the llama.cpp that llama-cpp-python vendors
(bench/native_tools.py, bench/server_build.py; minutes), cached under ~/.cache/phase.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import Context, Section
from bench.sections import BY_NAME, SECTIONS, BenchSection

REPO = Path(__file__).resolve().parent.parent
NAMES = ",".join(s.name for s in SECTIONS)


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=NAMES,
                   help=f"comma-separated sections (default: all of {NAMES})")
    p.add_argument("--list", action="store_true",
                   help="print each section, what it measures and its module, and exit")
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
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from phase.campaign.plan import DEFAULT_PLAN

    p = _parser()
    args = p.parse_args(argv)
    args.only = _csv(args.only)
    unknown = [s for s in args.only if s not in BY_NAME]
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
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


def section_list() -> str:
    """What `--list` prints: one line per section, in the order they run."""
    width = max(len(s.name) for s in SECTIONS)
    return "\n".join(f"{s.name:<{width}}  {s.measures} (bench/{s.module}.py:{s.function})"
                     for s in SECTIONS)


def _chosen(args: argparse.Namespace) -> list[BenchSection]:
    return [s for s in SECTIONS if s.name in args.only]


def _native(chosen: list[BenchSection]) -> tuple[Path | None, str | None, str | None]:
    """The native llama.cpp build, when a section compares with it: (bin, problem, build)."""
    from bench import native

    if not any(s.native for s in chosen):
        return None, None, None
    try:
        bin_path = native.ensure_built(lambda m: _log(f"  native: {m}"))
        return bin_path, None, native.build_info(bin_path)
    except (native.NativeError, OSError) as exc:
        _log(f"native llama.cpp unavailable: {exc}")
        return None, str(exc), None


def _tools(chosen: list[BenchSection]) -> tuple[Path | None, str | None]:
    """The native llama.cpp tools, when a section runs them: (bin, problem)."""
    from bench import native, native_tools

    if not any(s.tools for s in chosen):
        return None, "no section asked for them"
    try:
        return native_tools.ensure_tools(lambda m: _log(f"  tools: {m}")), None
    except (native.NativeError, OSError) as exc:
        _log(f"native llama.cpp tools unavailable: {exc}")
        return None, str(exc)


def _server(chosen: list[BenchSection]) -> tuple[Path | None, str | None]:
    """llama-server, when a section runs it: (binary, problem)."""
    from bench import native, server_build

    if not any(s.server for s in chosen):
        return None, "no section asked for it"
    try:
        return server_build.ensure_server(lambda m: _log(f"  server: {m}")), None
    except (native.NativeError, OSError) as exc:
        _log(f"llama-server unavailable: {exc}")
        return None, str(exc)


def _run_sections(chosen: list[BenchSection], ctx: Context) -> list[Section]:
    """Each chosen section in order; one that fails is recorded as skipped, with why."""
    from bench import native
    from phase.base.errors import PhaseError

    runners = {s.name: s.runner() for s in chosen}  # every module imported before any runs
    sections = []
    for section in chosen:
        _log(f"[{section.name}]")
        t0 = time.perf_counter()
        try:
            sections.append(runners[section.name](ctx))
        except (PhaseError, native.NativeError, OSError, RuntimeError) as exc:
            # One broken section (a tool that crashed, a missing file) must not cost the
            # others' measurements; the reason is recorded in place of its rows.
            _log(f"  {section.name} failed: {exc}")
            sections.append(Section(section.name, skipped=f"failed: {exc}"))
        print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return sections


def _record(args: argparse.Namespace, argv: list[str] | None, threads: int, started: float,
            build: str | None, tools_bin: Path | None, sections: list[Section]) -> int:
    """Write the JSON and Markdown files, print the table; the exit status."""
    from bench import native_tools, report

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


def main(argv: list[str] | None = None) -> int:
    from phase.base.errors import PhaseError
    from phase.decode.cores import physical_cores
    from phase.models.sources import resolve

    args = parse_args(argv)
    if args.list:
        print(section_list())
        return 0
    chosen = _chosen(args)
    threads = args.threads or physical_cores()
    _log(f"phase bench: {', '.join(args.only)}; target {args.model}, draft {args.draft}, "
         f"{args.tokens} tokens ({args.spec_tokens} for auto and ngram-native), "
         f"{args.repeats} repeats, {threads} threads")
    bin_path, problem, build = _native(chosen)
    tools_bin, tools_problem = _tools(chosen)
    server_bin, server_problem = _server(chosen)
    try:
        target = resolve(args.model) if any(s.model for s in chosen) else None
        draft = resolve(args.draft) if any(s.draft for s in chosen) else target
    except PhaseError as exc:
        _log(f"error: {exc}")
        return 2
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="phase-bench-") as tmp:
        ctx = Context(
            repeats=args.repeats, tokens=args.tokens, spec_tokens=args.spec_tokens,
            threads=threads, n_ctx=args.ctx, target_name=args.model, draft_name=args.draft,
            target_path=target.path if target else Path(),
            draft_path=draft.path if draft else Path(),
            ks=tuple(args.ks), quick=args.quick, native_bin=bin_path, native_problem=problem,
            workdir=Path(tmp), site_counts=tuple(args.site_counts),
            host_counts=tuple(args.host_counts),
            sampler_hz=(20.0, 100.0), tools_bin=tools_bin, tools_problem=tools_problem,
            server_bin=server_bin, server_problem=server_problem,
        )
        sections = _run_sections(chosen, ctx)
    return _record(args, argv, threads, started, build, tools_bin, sections)


if __name__ == "__main__":
    sys.exit(main())

"""Writing a benchmark run down: machine facts, a JSON file, a Markdown table, a terminal table."""

from __future__ import annotations

import json
import os
import platform
import socket
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.common import Section
from phase.analysis.bench_rows import NOISY, BenchRow
from phase.campaign import machine
from phase.storage.claim import claim_numbered
from phase.storage.writing import create_exclusive


def machine_info(threads: int, native_build: str | None,
                 native_tools: str | None = None) -> dict[str, Any]:
    """`native_build`: the native llama.cpp the decode sections compare with;
    `native_tools`: the build of the tools from the same source (llama-bench,
    llama-speculative, llama-speculative-simple; bench/native_tools.build_label), when a
    section ran them."""
    from phase.decode.cores import physical_cores

    return {
        "host": socket.gethostname(),
        "cpu_model": machine.cpu_model(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": physical_cores(),
        "threads_used": threads,
        "ram_bytes": machine.ram_bytes(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "llama_cpp_python": metadata.version("llama-cpp-python"),
        "native_build": native_build,
        "native_tools": native_tools,
    }


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "fraction":
        return f"{100 * value:.1f}%"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def _ratio(row: BenchRow) -> str:
    if row.ratio is None:
        return "—"
    if row.unit == "fraction":  # acceptance rows carry a difference in points
        return f"{100 * row.ratio:+.1f} pts"
    if row.section == "bandwidth":
        return f"{100 * row.ratio:.0f}% of limit"
    return f"{row.ratio:.3f}x"


def _verdict(row: BenchRow) -> str:
    if row.target is None:
        return "info"
    if row.passed is None:
        return "n/a"
    word = "PASS" if row.passed else "FAIL"
    noise = row.noise
    return f"{word} (noisy)" if noise is not None and noise > NOISY else word


def _noise(row: BenchRow) -> str:
    noise = row.noise
    return "" if noise is None else f"{100 * noise:.0f}%"


HEADER = ("item", "phase", "reference", "vs", "ratio", "target", "result", "spread")


def _cells(row: BenchRow) -> tuple[str, ...]:
    def show(value: float | None) -> str:
        text = _fmt(value, row.unit)
        return text if value is None or row.unit == "fraction" else f"{text} {row.unit}"

    return (row.item, show(row.phase), show(row.reference),
            row.reference_name, _ratio(row), row.target or "", _verdict(row), _noise(row))


def terminal_table(sections: list[Section]) -> str:
    rows = [_cells(r) for s in sections for r in s.rows]
    widths = [max(len(h), *(len(c[i]) for c in rows)) if rows else len(h)
              for i, h in enumerate(HEADER)]
    line = "  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))
    out = [line, "-" * len(line)]
    for s in sections:
        if s.skipped:
            out.append(f"{s.name}: skipped ({s.skipped})")
        for r in s.rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(_cells(r), widths, strict=True)))
    notes = [f"  {r.item}: {r.detail}" for s in sections for r in s.rows if r.detail]
    return "\n".join([*out, "", "details:", *notes] if notes else out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _native(m: dict[str, Any]) -> str:
    """What native llama.cpp the run compared with: the build, the tools, both or none (a
    run of tool sections only once said "not used" while it ran llama-bench)."""
    parts = []
    if m.get("native_build"):
        parts.append(f"native llama.cpp from its sdist: {_md(str(m['native_build']))}")
    if m.get("native_tools"):
        parts.append("llama.cpp tools built from its sdist: "
                     f"{_md(str(m['native_tools']))} (version-source hash)")
    return "; ".join(parts) or "native llama.cpp: not used in this run"


def markdown(data: dict[str, Any], sections: list[Section]) -> str:
    m = data["machine"]
    c = data["config"]
    lines = [
        f"# phase benchmarks, {data['created'][:10]}, {_md(m['host'])}",
        "",
        f"- CPU: {_md(str(m['cpu_model']))}, {m['physical_cores']} physical cores / "
        f"{m['logical_cpus']} logical CPUs; {m['threads_used']} threads used on both sides",
        f"- llama-cpp-python {m['llama_cpp_python']}; {_native(m)}",
        f"- models: target {c['target']}, draft {c['draft']}; {c['tokens']} tokens per run"
        + (f" ({c['spec_tokens']} in auto and ngram-native)" if "spec_tokens" in c else "")
        + f", median of {c['repeats']} alternating repeats; prompts sent raw (no chat template) "
        "on both sides, except in auto, ngram-native and serving_reference (chat-formatted, as a "
        "campaign sends them)" + ("; **--quick**" if c["quick"] else ""),
        "- spread: (max - min) / median over the repeats of the row's figures; a result "
        f"marked (noisy) had a spread above {100 * NOISY:.0f}%: rerun it on a quiet machine",
        "",
        "| " + " | ".join(HEADER) + " | detail |",
        "|" + "---|" * (len(HEADER) + 1),
    ]
    for s in sections:
        if s.skipped:
            lines.append(f"| {s.name}: skipped |" + " |" * (len(HEADER) - 1)
                         + f" {_md(s.skipped)} |")
        for r in s.rows:
            lines.append("| " + " | ".join(_md(c) for c in _cells(r)) + f" | {_md(r.detail)} |")
    lines.append("")
    return "\n".join(lines)


def write(out_dir: Path, data: dict[str, Any], sections: list[Section]) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    host = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in data["machine"]["host"])
    # A second run on the same day and host gets the next free name (phase's own numbering,
    # as a campaign's -o): a bench result is a record, never replaced.
    with claim_numbered(out_dir / f"{stamp}-{host}.json") as claim:
        json_path = claim.target
        md_path = json_path.with_suffix(".md")
        create_exclusive(json_path, json.dumps(data, indent=1, allow_nan=False) + "\n")
        create_exclusive(md_path, markdown(data, sections))
    return json_path, md_path

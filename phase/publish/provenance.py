"""Where a results file's numbers came from: machine, software, models, date, commit, command."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from phase.hosts import machine_label

from .anchors import raw_page
from .datasets import Dataset


@dataclass(frozen=True)
class ModelRow:
    role: str
    name: str
    quant: str
    size: str
    sha256: str
    source: str


@dataclass(frozen=True)
class ProvenanceBox:
    dataset: str
    data_page: str
    download: str
    sha256: str
    items: list[tuple[str, str]]
    models: list[ModelRow] = field(default_factory=list)
    command: str | None = None


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def provenance_box(ds: Dataset, root: str, extra: dict[str, str]) -> ProvenanceBox:
    """`extra` is the note's source_provenance, used only for summary-only (transcribed) files."""
    page = raw_page(ds.stem, root)
    download = f"{root}raw/{ds.name}"
    raw = ds.raw
    if raw is None:
        s = ds.summary
        items = [("Machine", s.machine or "not recorded"), ("Source", s.source)]
        items += list(extra.items())
        if s.raw_runs_note:
            items.append(("Raw runs", s.raw_runs_note))
        return ProvenanceBox(ds.name, page, download, ds.sha256, items)
    p = raw.provenance
    commit = p.git_commit or "not recorded"
    if p.git_commit and p.git_dirty:
        commit += " (working tree had uncommitted changes)"
    sensors = ", ".join(
        f"{s.name} ({s.scope} {s.kind}, smoothing {s.smoothing_s:g} s)" for s in raw.sensors
    ) or "none"
    items = [
        ("Machine", f"{machine_label(raw)}; {p.os}"),
        ("Software", f"phase {p.phase_version}, llama-cpp-python "
         f"{p.llama_cpp_python_version or 'unknown'}, Python {p.python_version}"),
        ("Threads", f"{p.threads} (batch {p.threads_batch})"),
        ("Energy sensors", sensors),
    ]
    items += [(f"Unavailable: {u.backend}", u.reason) for u in raw.sensors_unavailable]
    items += [
        ("Date", raw.created.isoformat()),
        ("Commit", commit),
        ("Campaign", f"{raw.id}: {len(raw.runs)} runs, {raw.config.tokens} tokens each, "
         f"{raw.config.repeats} repeats, status {raw.status}"),
    ]
    if p.llama_cpp_system_info:
        items.append(("llama.cpp", p.llama_cpp_system_info))
    models = [
        ModelRow(m.role, m.name, m.quant or "—", _mb(m.size_bytes), m.sha256, m.source)
        for m in raw.models
    ]
    return ProvenanceBox(ds.name, page, download, ds.sha256, items, models,
                         shlex.join(p.command_line) if p.command_line else None)

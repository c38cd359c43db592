"""Where a results file's numbers came from: machine, software, models, date, commit, command."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from phase.analysis import adaptive
from phase.models.sources import EMBEDDED
from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import raw_page
from phase.publish.numbers.downloads import data_table
from phase.results import ResultsFile, SensorInfo
from phase.results.host_labels import machine_label


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
    # The data page's table as CSV, beside the JSON download: (href, sha256).
    csv: tuple[str, str] | None = None


def _assumed(sensor: SensorInfo) -> set[str]:
    """Fields whose value was assumed rather than read (SensorInfo.assumed, a field newer
    files carry; older ones have none, so it is read defensively)."""
    names = getattr(sensor, "assumed", None) or []
    return {str(n) for n in names}


def sensor_text(sensor: SensorInfo) -> str:
    """One sensor: scope, kind, and each timing/limit figure, marked where it was assumed."""
    assumed = _assumed(sensor)

    def mark(name: str, text: str) -> str:
        return f"{text} (assumed, not read from the device)" if name in assumed else text

    parts = [f"{sensor.scope} {sensor.kind}",
             mark("smoothing_s", f"smoothing {sensor.smoothing_s:g} s")]
    if sensor.update_period_s is not None or "update_period_s" in assumed:
        parts.append(mark("update_period_s", f"updates every {sensor.update_period_s:g} s"
                          if sensor.update_period_s is not None else "update period unknown"))
    if sensor.max_power_w is not None or "max_power_w" in assumed:
        parts.append(mark("max_power_w", f"max {sensor.max_power_w:g} W"
                          if sensor.max_power_w is not None else "max power unknown"))
    shown = {"smoothing_s", "update_period_s", "max_power_w"}
    parts += [f"{name} assumed, not read from the device" for name in sorted(assumed - shown)]
    return f"{sensor.name} ({', '.join(parts)})"


def _csv(ds: Dataset, root: str) -> tuple[str, str]:
    table = data_table(ds).files[0]
    return f"{root}raw/{table.name}", table.sha256


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
        return ProvenanceBox(ds.name, page, download, ds.sha256, items, csv=_csv(ds, root))
    p = raw.provenance
    commit = p.git_commit or "not recorded"
    if p.git_commit and p.git_dirty:
        commit += " (working tree had uncommitted changes)"
    sensors = "; ".join(sensor_text(s) for s in raw.sensors) or "none"
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
    bought = adaptive.bought(raw)
    if bought is not None:
        items.append(("Adaptive repeats", bought))
    if p.llama_cpp_system_info:
        items.append(("llama.cpp", p.llama_cpp_system_info))
    kernels = _kernels(raw)
    if kernels:
        items.append(("Kernels", kernels))
    models = [
        ModelRow(m.role, m.name, _quant(m.quant, m.sha256), _mb(m.size_bytes), m.sha256,
                 m.source)
        for m in raw.models
    ]
    return ProvenanceBox(ds.name, page, download, ds.sha256, items, models,
                         shlex.join(p.command_line) if p.command_line else None, _csv(ds, root))


def _kernels(raw: ResultsFile) -> str | None:
    """Which of llama.cpp's kernels could run, as far as the file records it: they decide
    whether two campaigns' speeds compare (phase.analysis.comparable)."""
    p = raw.provenance
    parts = []
    if p.cpu_extra_buffers is not None:
        used = "used" if p.cpu_extra_buffers else "not used"
        parts.append(f"extra CPU buffers (AMX tiles, repacked weights) {used}"
                     + (f": {p.cpu_extra_buffers_reason}" if p.cpu_extra_buffers_reason else ""))
    if p.weight_buffers is not None:
        parts.append(f"weights loaded into {', '.join(p.weight_buffers) or 'no named buffer'}")
    if p.cpu_flags is not None:
        parts.append(f"CPU flags {' '.join(p.cpu_flags) or 'none of those llama.cpp checks'}")
    return "; ".join(parts) or None


def _quant(recorded: str | None, sha256: str) -> str:
    """The storage format as the file recorded it, corrected where the file is one of the
    embedded models (known by sha256, its format read from its GGUF header): phase before
    schema 6 recorded llama_model_ftype, which this binding reports as F32 for every file."""
    known = next((m.quant for m in EMBEDDED.values() if m.sha256 == sha256), None)
    if known is None or recorded == known:
        return recorded or "—"
    return f"{known} (recorded as {recorded or 'nothing'} by an older phase)"

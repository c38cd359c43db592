"""Which machine a campaign ran on: the host-class label, the full identity used to group and
merge campaigns, and the one-line description shown on pages."""

from __future__ import annotations

from phase.results import HostIdentity, ResultsFile
from phase.results.llama_build import build_accelerator


def accelerator_build(llama_system_info: str | None) -> str | None:
    """Which llama.cpp build ran ("cuda", "metal", ... or "cpu"), read from its system info
    as phase.decode reads a running build's (phase.results.llama_build); None when the system
    info was not recorded."""
    if not llama_system_info:
        return None
    return build_accelerator(llama_system_info)


def ram_gib(ram_bytes: int | None) -> int | None:
    """Memory in whole GiB: identical machines differ by what their kernels reserve."""
    return None if ram_bytes is None else round(ram_bytes / 2**30)


def host_class_of(results: ResultsFile) -> str:
    """The short host-class label (file names, grouping): the same in every file of a class."""
    return results.hosts[0].host_class if results.hosts else results.provenance.host_class


def host_identity_of(results: ResultsFile) -> HostIdentity:
    """The full identity of the host class a campaign ran on: recorded in `hosts`, or, in files
    older than that field, derived from the provenance (GPU driver unknown there)."""
    if results.hosts:
        return results.hosts[0].identity
    p = results.provenance
    return HostIdentity(cpu_model=p.cpu_model, cpu_cores=p.cpu_cores, ram_gib=ram_gib(p.ram_bytes),
                        gpus=list(p.gpus), gpu_driver=None,
                        accelerator=accelerator_build(p.llama_cpp_system_info))



def machine_label(raw: ResultsFile) -> str:
    p = raw.provenance
    parts = [p.cpu_model or "unknown CPU", f"{p.cpu_cores} cores"]
    if p.ram_bytes:
        parts.append(f"{p.ram_bytes / 2**30:.0f} GiB RAM")
    parts.append(", ".join(p.gpus) if p.gpus else "no GPU")
    return f"{p.host_class}: " + ", ".join(parts)

"""Facts about the machine and the software, recorded with every campaign."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from phase import REPO_ROOT, __version__
from phase.base.errors import env_value
from phase.results import HostIdentity, HostInfo, Provenance
from phase.results.host_labels import accelerator_build, ram_gib
from phase.sensors.nvidia.nvml import gpu_driver_version, gpu_names

if TYPE_CHECKING:  # types only: both load llama.cpp, which `phase measure --help` never needs
    from phase.decode.cpu_buffers import ExtraBuffers
    from phase.decode.placement import ModelPlacement


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "Hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


# The CPU flags that decide which of llama.cpp's kernels can run (ggml-cpu's feature checks):
# x86's AMX, AVX-512 and AVX families, Arm's dot-product, matrix and vector extensions.
KERNEL_FLAGS = frozenset({
    "amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "avx512f", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_vbmi", "avx512_bf16", "avx512_fp16", "avx_vnni", "avx2", "avx",
    "fma", "f16c", "sse4_2", "asimd", "asimddp", "asimdhp", "i8mm", "bf16", "sve", "sve2", "sme",
})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str] | None:
    """The CPU's flags among KERNEL_FLAGS, sorted, as the kernel reports them for the first
    CPU (x86 `flags`, Arm `Features`); None where there is no cpuinfo to read (macOS)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return sorted(set(value.split()) & KERNEL_FLAGS)
    return None


def ram_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def host_class(gpus: list[str] | None = None) -> str:
    """A short, file-name-safe label for the kind of machine: e.g. `x86_64-2c` or `h200`."""
    gpus = gpu_names() if gpus is None else gpus
    if gpus:
        label = re.sub(r"^nvidia\s+", "", gpus[0].lower())
        label = label.split()[0] if label else "gpu"
        if len(gpus) > 1:
            label += f"x{len(gpus)}"
    else:
        label = f"{platform.machine().lower() or 'cpu'}-{os.cpu_count() or 1}c"
    return re.sub(r"[^a-z0-9._-]+", "-", label)


def host_identity(llama_system_info: str | None, gpus: list[str] | None = None) -> HostIdentity:
    """The full identity of this host's class: what `phase merge` compares across shards."""
    gpus = gpu_names() if gpus is None else gpus
    return HostIdentity(
        cpu_model=cpu_model(),
        cpu_cores=os.cpu_count() or 1,
        ram_gib=ram_gib(ram_bytes()),
        gpus=gpus,
        gpu_driver=gpu_driver_version() if gpus else None,
        accelerator=accelerator_build(llama_system_info),
    )


def hostname() -> str:
    """This machine's name as runs record it; PHASE_HOSTNAME overrides it where the process's
    own hostname is not the machine's (a Kubernetes pod: set it to the node's name)."""
    return env_value(os.environ, "PHASE_HOSTNAME") or socket.gethostname()


def host_info(llama_system_info: str | None, shards: list[int] | None = None) -> HostInfo:
    """This host as a results file lists it (`ResultsFile.hosts`)."""
    gpus = gpu_names()
    return HostInfo(hostname=hostname(), host_class=host_class(gpus),
                    identity=host_identity(llama_system_info, gpus), shards=shards or [])


def git_state() -> tuple[str | None, bool | None]:
    """The commit of the phase checkout and whether its tracked files differ from it."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, bool(dirty)


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def temperatures_c(root: Path = Path("/sys/class/thermal")) -> dict[str, float]:
    """Readable thermal zones, by type; unreadable zones are simply absent."""
    temps: dict[str, float] = {}
    for zone in sorted(root.glob("thermal_zone*")):
        try:
            kind = (zone / "type").read_text().strip() or zone.name
            millideg = int((zone / "temp").read_text().strip())
        except (OSError, ValueError):
            continue
        temps[f"{kind}:{zone.name}"] = millideg / 1000.0
    return temps


def provenance(threads: int, threads_batch: int, llama_system_info: str | None,
               extra_buffers: ExtraBuffers | None = None,
               placement: ModelPlacement | None = None) -> Provenance:
    commit, dirty = git_state()
    gpus = gpu_names()
    return Provenance(
        phase_version=__version__,
        git_commit=commit,
        git_dirty=dirty,
        llama_cpp_python_version=package_version("llama_cpp_python"),
        llama_cpp_system_info=llama_system_info,
        python_version=sys.version.split()[0],
        os=platform.platform(),
        hostname=hostname(),
        host_class=host_class(gpus),
        cpu_model=cpu_model(),
        cpu_cores=os.cpu_count() or 1,
        ram_bytes=ram_bytes(),
        gpus=gpus,
        threads=threads,
        threads_batch=threads_batch,
        command_line=list(sys.argv),
        cpu_extra_buffers=None if extra_buffers is None else extra_buffers.enabled,
        cpu_extra_buffers_reason=None if extra_buffers is None else extra_buffers.reason,
        accelerator=placement.accelerator if placement else None,
        n_gpu_layers_offloaded=placement.n_gpu_layers_offloaded if placement else None,
        n_layers=placement.n_layers if placement else None,
        cpu_flags=cpu_flags(),
        weight_buffers=list(placement.buffers) if placement else None,
    )

"""Where a results file was measured: phase, llama.cpp, the host and the command."""

from __future__ import annotations

from phase.results.base import NonNegInt, PosInt, Strict


class Provenance(Strict):
    phase_version: str
    git_commit: str | None
    git_dirty: bool | None
    llama_cpp_python_version: str | None
    llama_cpp_system_info: str | None
    python_version: str
    os: str
    hostname: str
    host_class: str
    cpu_model: str | None
    cpu_cores: PosInt
    ram_bytes: NonNegInt | None
    gpus: list[str]
    threads: PosInt
    threads_batch: PosInt
    command_line: list[str]
    # Whether llama.cpp's extra CPU buffer types (AMX tiles, repacked weights) were used, and
    # why: they change which kernels ran (phase.decode.cpu_buffers). None in older files.
    cpu_extra_buffers: bool | None = None
    cpu_extra_buffers_reason: str | None = None
    # Where the model ran, as llama.cpp reported it when loading (phase.decode.placement):
    # the build's accelerator ("cpu", "cuda", "metal", ...), and how many of its layers
    # llama.cpp offloaded, counted as llama.cpp counts them (repeating layers + output layer).
    # None in files written before phase recorded them.
    accelerator: str | None = None
    n_gpu_layers_offloaded: NonNegInt | None = None
    n_layers: NonNegInt | None = None
    # What makes two campaigns' builds comparable (phase.analysis.comparable), recorded since
    # schema 12; None in older files. The CPU's own flags that select llama.cpp's kernels
    # (AMX, AVX-512, AVX2, NEON dot products, ...; phase.campaign.machine.cpu_flags), and the
    # buffer types llama.cpp loaded the target's weights into, as its load log names them
    # ("CPU_Mapped", "CPU_REPACK", "AMX", "CUDA0"): which kernels ran, not only which exist.
    cpu_flags: list[str] | None = None
    weight_buffers: list[str] | None = None

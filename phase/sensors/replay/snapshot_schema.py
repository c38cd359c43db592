"""What a sensors snapshot may hold (`phase sensors --snapshot`), checked before a replay uses
any of it, as results files are checked by their schema.

A snapshot comes from another machine, attached to a bug report: every field has its JSON
type (strict: no "1" for 1), every recorded time is a finite number and the times of a series
strictly increase (a replay divides by the steps between them), every value is finite, paths
are absolute and free of control characters, and a GPU's `index` is its place in the list
(the replay looks GPUs up by it), as is a CUDA device's `index`. Unknown keys are refused: a
typo is not silently ignored. Versions 1 and 2 share this schema: what version 2 added is
optional (docs/snapshots.md).
"""

from __future__ import annotations

import itertools
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from phase.results import ResultsError
from phase.results.io import first_problem

# A path as the recording machine named it: absolute, without control characters.
SysPath = Annotated[str, Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096)]
Name = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f/]+$", max_length=255)]
Time = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Text = Annotated[str, Field(max_length=1 << 16)]
Line = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$", max_length=255)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _increasing(times: list[float], what: str) -> None:
    for a, b in itertools.pairwise(times):
        if b <= a:
            raise ValueError(f"{what} times must strictly increase ({a} then {b})")


class Series(_Strict):
    """A second of reads: the first value and each change, with times from the first read.
    (Defaults are never written back: a field the file lacks stays absent for the replay,
    and only what a recording writes as null may be null.)"""

    changes: list[tuple[Time, int]] = []
    error: Text = ""
    code: int | None = None
    # Version 2: discovery read this file as an energy counter (it counts on in a replay).
    counter: bool = False

    @model_validator(mode="after")
    def _times(self) -> Series:
        _increasing([t for t, _ in self.changes], "change")
        return self


class FileEntry(_Strict):
    mode: Annotated[str, Field(pattern=r"^[0-7]{3,4}$")] | None = None
    text: Text = ""
    error: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]*$|^[0-9]+$")] = "EIO"
    read_error: Text = ""


class Fs(_Strict):
    kinds: dict[SysPath, Literal["dir", "file", "missing"]] = {}
    dirs: dict[SysPath, list[Name]] = {}
    files: dict[SysPath, FileEntry] = {}
    series: dict[SysPath, Series] = {}


class _Fact(_Strict):
    """An NVML answer: its value, or the error code and message it raised instead."""

    code: int | None = None
    error: Text = ""


# A recorded value is never null: the replay hands it to int()/str() as NVML would.
class FactStr(_Fact):
    value: Text = ""


class FactInt(_Fact):
    value: Annotated[int, Field(ge=0)] = 0


class FactPair(_Fact):
    """[major, minor] of a compute capability, [current, pending] of a MIG mode, [min, max]
    of the power limits (mW): two non-negative integers."""

    value: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)] = [0, 0]


class FactInts(_Fact):
    """The pids of the compute processes NVML listed on a GPU."""

    value: list[Annotated[int, Field(ge=0)]] = []


class FactStrs(_Fact):
    """The UUIDs of a GPU's MIG instances (`MIG-...`), in NVML's slot order."""

    value: Annotated[list[Line], Field(max_length=64)] = []


class Gpu(_Strict):
    index: Annotated[int, Field(ge=0)]
    handle: _Fact = _Fact()
    name: FactStr = FactStr()
    uuid: FactStr = FactStr()
    pci_bus_id: FactStr = FactStr()
    architecture: FactInt = FactInt()
    cuda_cc: FactPair = FactPair()
    mig_mode: FactPair = FactPair()
    power_limit_constraints_mw: FactPair = FactPair()
    enforced_power_limit_mw: FactInt = FactInt()
    energy_mj: Series = Series()
    power_mw: Series = Series()
    power_instant_mw: Series = Series()
    # Other work on the GPU when the snapshot was taken (phase.sensors.nvidia.gpu_activity);
    # absent in older snapshots: idle and alone.
    utilization_pct: FactInt = FactInt()
    compute_pids: FactInts = FactInts()
    # Version 2: its MIG instances (absent: not recorded, so a MIG UUID cannot be placed).
    mig_devices: FactStrs = FactStrs()
    # NVLink-C2C to a Grace CPU (1: a GH200/GB200 module; absent: not recorded).
    c2c_mode: FactInt = FactInt()


class Nvml(_Strict):
    init_error: Text = ""
    count_error: Text = ""
    driver_version: FactStr = FactStr()
    gpus: list[Gpu] = []

    @model_validator(mode="after")
    def _indices(self) -> Nvml:
        for place, gpu in enumerate(self.gpus):
            if gpu.index != place:
                raise ValueError(f"gpus[{place}].index is {gpu.index}; a GPU's index is its "
                                 "place in the list")
        return self


class ZeusSample(_Strict):
    """One cumulative read: every field, null where this Mac has no such counter."""

    cpu_total_mj: Finite | None
    gpu_mj: Finite | None
    gpu_sram_mj: Finite | None
    ane_mj: Finite | None
    dram_mj: Finite | None


class Zeus(_Strict):
    installed: bool
    changes: list[tuple[Time, ZeusSample]] = []
    error: Text = ""
    code: int | None = None

    @model_validator(mode="after")
    def _times(self) -> Zeus:
        _increasing([t for t, _ in self.changes], "change")
        # Each field is extrapolated as a counter: one that is null in a read must be null
        # in every read.
        if self.changes:
            present = [{k for k, v in s if v is not None} for _, s in self.changes]
            if any(p != present[0] for p in present):
                raise ValueError("a counter is null in some reads and not in others")
        return self


class PmReading(_Strict):
    t_s: Finite
    key: Name
    w: Finite


class Powermetrics(_Strict):
    # At least 10 ms: the replay emits output at this pace, and no Mac samples faster.
    interval_s: Annotated[float, Field(ge=0.01, le=60, allow_inf_nan=False)]
    readings: list[PmReading] = []
    # Version 2: what powermetrics printed, chunk by chunk with its arrival time (s).
    raw: Annotated[list[tuple[Time, Text]], Field(max_length=1000)] = []
    error: Text = ""

    @model_validator(mode="after")
    def _times(self) -> Powermetrics:
        _increasing([t for t, _ in self.raw], "raw chunk")
        return self


class Apple(_Strict):
    system: Name = "Linux"
    machine: Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$", max_length=255)] = ""
    powermetrics_path: SysPath | None = None
    euid: int = -1
    zeus: Zeus = Zeus(installed=False)
    powermetrics: Powermetrics = Powermetrics(interval_s=0.1)


class CudaDevice(_Strict):
    index: Annotated[int, Field(ge=0)]
    pci_bus_id: Annotated[str, Field(pattern=r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
                                             r"\.[0-7]$")]
    name: Line = ""


class Cuda(_Strict):
    """Version 2: CUDA's device list as the recording process saw it
    (phase.sensors.nvidia.cuda_devices), or why the driver API could not say."""

    devices: Annotated[list[CudaDevice], Field(max_length=64)] = []
    error: Text = ""
    code: int | None = None

    @model_validator(mode="after")
    def _indices(self) -> Cuda:
        for place, device in enumerate(self.devices):
            if device.index != place:
                raise ValueError(f"devices[{place}].index is {device.index}; a CUDA device's "
                                 "index is its place in the list")
        return self


class Roots(_Strict):
    rapl: SysPath
    hwmon: SysPath
    iio: SysPath


class Snapshot(_Strict):
    format: Literal["phase-sensors-snapshot"]
    version: Literal[1, 2]
    phase_version: Text = ""
    taken: Text = ""
    host: dict[Name, Text | None] = {}
    build: dict[Name, Text | None] = {}
    env: dict[Name, Text] = {}
    roots: Roots
    fs: Fs = Fs()
    nvml: Nvml = Nvml()
    cuda: Cuda = Cuda()
    apple: Apple = Apple()


def check(data: Any, path: object) -> dict[str, Any]:
    """`data` (a parsed snapshot) checked against the schema, as plain JSON-shaped values
    holding only what was recorded; ResultsError naming the JSON path otherwise."""
    try:
        # Validated as JSON (as results are, phase.results.io.parse): JSON's own types, where
        # an array is a pair; `data` already passed the strict reader (no NaN, no duplicates).
        snapshot = Snapshot.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        raise ResultsError(first_problem(exc, str(path))) from None
    return snapshot.model_dump(mode="json", exclude_unset=True)

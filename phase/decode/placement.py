"""Where llama.cpp put a model: its accelerator, the devices it used, the layers it offloaded.

Read from llama.cpp, never assumed: while a model loads, phase keeps its log lines
(`llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H200) (0000:01:00.0) - ... MiB
free`, `load_tensors: offloaded 29/29 layers to GPU`). A build without GPU offload
(`llama_supports_gpu_offload()` false) logs neither: nothing was offloaded, and the layer
count comes from `llama_model_n_layer` (+1 for the output layer, as llama.cpp counts it when
it offloads). The PCI bus id identifies each GPU to the sensors, whatever the CUDA and NVML
index orders are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import llama_cpp

from phase.decode import backend
from phase.results.llama_build import backend_kind, build_accelerator

_USING = re.compile(r"using device (?P<name>\S+) \((?P<desc>.*)\) \((?P<id>[^()]*)\) - \d+ MiB")
_USING_NO_ID = re.compile(r"using device (?P<name>\S+) \((?P<desc>.*)\) - \d+ MiB")  # older
_OFFLOADED = re.compile(r"offloaded (?P<n>\d+)/(?P<of>\d+) layers to GPU")
# `load_tensors:   CPU_REPACK model buffer size =   388.12 MiB`: one line per buffer type the
# weights went into, which says which kernels run them (AMX tiles, repacked, plain, a GPU's).
_BUFFER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_]*) model buffer size")


@dataclass(frozen=True)
class Device:
    name: str  # "CUDA0"
    description: str  # "NVIDIA H200"
    pci_bus_id: str | None  # "0000:01:00.0"; None where llama.cpp gave no id


@dataclass(frozen=True)
class ModelPlacement:
    accelerator: str  # "cpu", "cuda", "metal", "vulkan", ...
    n_gpu_layers_offloaded: int
    n_layers: int
    devices: tuple[Device, ...] = field(default_factory=tuple)
    buffers: tuple[str, ...] = field(default_factory=tuple)  # weight buffer types, as logged


def _kind(device_name: str) -> str:
    return backend_kind(re.sub(r"\d+$", "", device_name))


def parse(messages: list[str], *, offload_supported: bool, n_layer: int,
          system_info: str) -> ModelPlacement:
    text = "".join(messages)
    devices = tuple(
        Device(m.group("name"), m.group("desc"), (m.groupdict().get("id") or "").strip() or None)
        for line in text.splitlines()
        if (m := _USING.search(line) or _USING_NO_ID.search(line))
    )
    devices = tuple(d if d.pci_bus_id != "unknown id" else Device(d.name, d.description, None)
                    for d in devices)
    offloaded = _OFFLOADED.search(text)
    if offloaded is not None:
        n, of = int(offloaded.group("n")), int(offloaded.group("of"))
    else:
        n, of = 0, n_layer + 1
    accelerator = (_kind(devices[0].name) if devices
                   else build_accelerator(system_info, offload_supported))
    if n == 0:
        devices = ()
    buffers = tuple(dict.fromkeys(m.group("name") for m in _BUFFER.finditer(text)))
    return ModelPlacement(accelerator if offload_supported else "cpu", n, of, devices, buffers)


def of_model(load_log: list[str], model: object) -> ModelPlacement:
    """The placement of a model just loaded, from its load log and llama.cpp's answers."""
    return parse(load_log, offload_supported=backend.offload_supported(),
                 n_layer=int(llama_cpp.llama_model_n_layer(model)),
                 system_info=backend.system_info())


def this_build() -> str:
    """The accelerator of the installed llama.cpp build ("cpu" when it cannot offload)."""
    return build_accelerator(backend.system_info(), backend.offload_supported())

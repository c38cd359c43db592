"""Discovery orders the sensor backends by what each declares (its priority, what it measures,
the backends it reads), never by where it was registered (issue 45, item 6). The machines are
snapshots replayed from tests/fixtures/sensors/machines."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import random
from collections.abc import Iterable
from pathlib import Path

import pytest

import phase.sensors
from phase.sensors.core.primary import Placement, choose_primary
from phase.sensors.cpu import amd_energy, rapl
from phase.sensors.discovery import REGISTERED, Registered, discover, ordered
from phase.sensors.replay import replay

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"
CPU = Placement("cpu")


def survey(name: str, backends: Iterable[Registered] = REGISTERED
           ) -> tuple[list[str], list[tuple[str, str]], list[str] | None, str | None]:
    """Sensor names in discovery's order, unavailable backends, the CPU-only primary choice."""
    m, roots = replay.machine(replay.load(MACHINES / f"{name}.json"))
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=m,
                     backends=backends)
    try:
        choice, why = choose_primary(found.sensors, CPU, env={})
        return ([s.name for s in found.sensors],
                [(u.backend, u.reason) for u in found.unavailable],
                choice.sensors if choice else None, choice.reason if choice else why)
    finally:
        found.close()


def with_priority(backend: str, priority: int) -> list[Registered]:
    return [dataclasses.replace(r, declared=dataclasses.replace(r.declared, priority=priority))
            if r.declared.backend == backend else r for r in REGISTERED]


@pytest.mark.parametrize("name", ["epyc-2s-rapl-and-amd-energy", "workstation-l40s-h100",
                                  "mi250x-4x-dual-die", "jetson-agx-orin"])
def test_reordering_the_registration_changes_nothing(name: str) -> None:
    expected = survey(name)
    by_name = sorted(REGISTERED, key=lambda r: r.declared.backend)
    shuffled = list(REGISTERED)
    random.Random(45).shuffle(shuffled)
    for backends in (by_name, list(reversed(by_name)), shuffled):
        assert survey(name, backends) == expected
    assert expected[0], "the fixture machine has sensors"


def test_the_declared_priority_decides_between_two_package_backends() -> None:
    # Both drivers read this EPYC's energy MSRs, two sockets each: RAPL declares the higher
    # priority, so its zones are listed first and are the chip's energy.
    assert rapl.DECLARED.measures == amd_energy.DECLARED.measures == "package"
    assert rapl.DECLARED.priority > amd_energy.DECLARED.priority
    names, _, chosen, reason = survey("epyc-2s-rapl-and-amd-energy")
    rapl_names = [n for n in names if n.startswith("rapl:package")]
    amd_names = [n for n in names if n.startswith("amd_energy:")]
    assert len(rapl_names) == len(amd_names) == 2
    assert chosen == rapl_names and reason is not None and "RAPL package zones" in reason
    assert names.index(rapl_names[0]) < names.index(amd_names[0])

    # The same machine, amd_energy declared above RAPL: the choice and the order follow.
    names, _, chosen, reason = survey("epyc-2s-rapl-and-amd-energy",
                                      with_priority(amd_energy.BACKEND,
                                                    rapl.DECLARED.priority + 1))
    assert chosen == amd_names and reason is not None and "amd_energy socket counters" in reason
    assert names.index(amd_names[0]) < names.index(rapl_names[0])


def test_a_backend_is_probed_after_the_backends_it_reads() -> None:
    # amdsmi reads the GPUs amdgpu found: it comes after amdgpu even when declared above it.
    raised = with_priority("amdsmi", 1000)
    order = [r.declared.backend for r in ordered(raised)]
    assert order.index("amdgpu") < order.index("amdsmi")
    assert order[0] == "rapl"  # the rest still by priority
    default = [r.declared.backend for r in ordered(REGISTERED)]
    assert default == sorted(default, key=lambda b: -next(
        r.declared.priority for r in REGISTERED if r.declared.backend == b))


def test_every_backend_module_is_registered_once() -> None:
    declared = set()
    for info in pkgutil.walk_packages(phase.sensors.__path__, f"{phase.sensors.__name__}."):
        module = importlib.import_module(info.name)
        if hasattr(module, "DECLARED"):
            assert module.DECLARED.backend == module.BACKEND
            declared.add(module.BACKEND)
    registered = [r.declared.backend for r in REGISTERED]
    assert sorted(registered) == sorted(declared) and len(set(registered)) == len(registered)
    assert {r.declared.measures for r in REGISTERED} == {"package", "gpu", "soc", "wall"}

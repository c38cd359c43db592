"""Which sensor's reading physically includes which other's: the pairs worth comparing.

A sensor that declares `encloses` (a list of sensor names) is taken at its word. One that does
not (`None`: older files) gets an enclosure derived from scope and backend, kept to what is
true on every machine phase knows:

- a `wall` sensor encloses every sensor that is not at wall scope (it measures the machine);
- a `board` sensor encloses the `chip` sensors of its own backend (RAPL psys the packages,
  Jetson VDD_IN the CPU/GPU rail); a `board` meter, attached by the user to the machine,
  encloses every chip sensor;
- RAPL psys also encloses RAPL's `module` zones (dram): the platform domain covers the
  memory as well as the packages;
- nothing else: a `module` sensor (RAPL dram, Apple DRAM) is disjoint from the package, not
  around it, and a board sensor of one backend says nothing about another backend's chip
  (RAPL psys does not see a discrete GPU).
"""

from __future__ import annotations

from phase.results import ResultsFile, SensorInfo

USER_METER_BACKEND = "meter"
RAPL_BACKEND = "rapl"  # the backend name results files record (phase.sensors.cpu.rapl.BACKEND)


def _derived(big: SensorInfo, small: SensorInfo) -> bool:
    if big.name == small.name:
        return False
    if big.scope == "wall":
        return small.scope != "wall"
    if big.scope == "board" and small.scope == "chip":
        return big.backend == small.backend or big.backend == USER_METER_BACKEND
    if big.scope == "board" and small.scope == "module":
        return big.backend == small.backend == RAPL_BACKEND
    return False


def enclosures(results: ResultsFile) -> dict[str, list[str]]:
    """Sensor name -> names of the declared sensors its reading includes (declared, else
    derived; see the module docstring). Names a declaration lists but the file does not
    declare are left out (the schema rule reports them)."""
    sensors: dict[str, SensorInfo] = {}
    for s in results.sensors:
        sensors.setdefault(s.name, s)
    out: dict[str, list[str]] = {}
    for big in sensors.values():
        if big.encloses is not None:
            inside = [n for n in dict.fromkeys(big.encloses) if n in sensors and n != big.name]
        else:
            inside = [s.name for s in sensors.values() if _derived(big, s)]
        if inside:
            out[big.name] = inside
    return out


def how(results: ResultsFile, name: str) -> str:
    """'declared' or 'derived from scope': how this sensor's enclosure was decided."""
    info = next((s for s in results.sensors if s.name == name), None)
    return "declared" if info is not None and info.encloses is not None else "derived from scope"

"""Apple Silicon: IOReport energy counters via zeus-apple-silicon, else `powermetrics`.

zeus-apple-silicon (the optional `apple` extra) reads cumulative energy counters in mJ
without sudo; we expose CPU, GPU and ANE (chip) and DRAM (module) as counters.

Without it we fall back to `powermetrics -f plist`, which needs root. It prints one plist
per interval, separated by NUL bytes; each carries the mean power (mW) over that interval,
so a reading lags by up to one interval: declared smoothing = the interval.
"""

from __future__ import annotations

import os
import platform
import plistlib
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

from phase.results import Scope
from phase.sensors.base import Probe, ReadError, Sensor, now

BACKEND = "apple"
POWERMETRICS_INTERVAL_S = 0.1
_ZEUS_FIELDS: tuple[tuple[str, str, Scope], ...] = (
    ("cpu_total_mj", "apple:cpu", "chip"),
    ("gpu_mj", "apple:gpu", "chip"),
    ("ane_mj", "apple:ane", "chip"),
    ("dram_mj", "apple:dram", "module"),
)
_POWERMETRICS_FIELDS: tuple[tuple[str, str], ...] = (
    ("combined_power", "apple:package-power"),
    ("cpu_power", "apple:cpu-power"),
    ("gpu_power", "apple:gpu-power"),
)


class ZeusCounter(Sensor):
    backend = BACKEND

    def __init__(self, monitor: Any, field: str, name: str, scope: Scope) -> None:
        super().__init__(name, scope=scope, kind="counter", smoothing_s=0.0, max_power_w=None)
        self.monitor = monitor
        self.field = field

    def read_value(self) -> float:
        try:
            value = getattr(self.monitor.get_cumulative_energy(), self.field)
        except Exception as exc:  # the binding raises RuntimeError and friends
            raise ReadError(f"{self.name}: {exc}") from None
        if value is None:
            raise ReadError(f"{self.name}: IOReport returned no {self.field}")
        return value * 1e-3


def split_plists(buffer: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """Parse every complete NUL-terminated plist in buffer; return them and the remainder."""
    *complete, rest = buffer.split(b"\0")
    docs = []
    for chunk in complete:
        chunk = chunk.strip()
        if chunk:
            docs.append(plistlib.loads(chunk))
    return docs, rest


def powermetrics_watts(doc: dict[str, Any]) -> Iterator[tuple[str, float]]:
    processor = doc.get("processor", {})
    for key, name in _POWERMETRICS_FIELDS:
        if isinstance(processor.get(key), int | float):
            yield name, processor[key] * 1e-3


class PowermetricsStream:
    """One `powermetrics` child shared by its sensors; a reader thread keeps the latest values."""

    def __init__(self, interval_s: float = POWERMETRICS_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.latest: dict[str, tuple[float, float]] = {}  # name -> (unix time, W)
        self.proc = subprocess.Popen(
            ["powermetrics", "-f", "plist", "--samplers", "cpu_power,gpu_power",
             "-i", str(round(interval_s * 1000))],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.thread = threading.Thread(target=self._pump, name="powermetrics", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        rest = b""
        while chunk := self.proc.stdout.read1(65536):
            docs, rest = split_plists(rest + chunk)
            for doc in docs:
                t = now()
                for name, watts in powermetrics_watts(doc):
                    self.latest[name] = (t, watts)

    def value(self, name: str) -> float:
        seen = self.latest.get(name)
        if seen is None:
            raise ReadError(f"{name}: powermetrics has not reported yet")
        t, watts = seen
        if now() - t > 5 * self.interval_s:
            raise ReadError(f"{name}: powermetrics stopped reporting")
        return watts

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class PowermetricsPower(Sensor):
    backend = BACKEND

    def __init__(self, stream: PowermetricsStream, name: str) -> None:
        super().__init__(name, scope="chip", kind="power", smoothing_s=stream.interval_s,
                         max_power_w=None)
        self.stream = stream

    def read_value(self) -> float:
        return self.stream.value(self.name)

    def close(self) -> None:
        self.stream.close()


def _probe_zeus(found: Probe) -> bool:
    try:
        from zeus_apple_silicon import AppleEnergyMonitor  # type: ignore[import-not-found]
    except ImportError:
        return False
    try:
        monitor = AppleEnergyMonitor()
        sample = monitor.get_cumulative_energy()
    except Exception as exc:
        found.problems.append(f"zeus-apple-silicon could not read IOReport: {exc}")
        return False
    for field, name, scope in _ZEUS_FIELDS:
        if getattr(sample, field, None) is not None:
            found.sensors.append(ZeusCounter(monitor, field, name, scope))
    return found.available


def probe() -> Probe:
    found = Probe(BACKEND)
    if platform.system() != "Darwin":
        found.problems.append(f"not a Mac (this is {platform.system()} {platform.machine()})")
        return found
    if _probe_zeus(found):
        return found
    if shutil.which("powermetrics") is None:
        found.problems.append("powermetrics not found; install the apple extra: "
                              "`pip install 'phase[apple]'` (zeus-apple-silicon, no sudo)")
        return found
    if os.geteuid() != 0:
        found.problems.append(
            "powermetrics needs root: run phase with sudo, or install the apple extra "
            "(`pip install 'phase[apple]'`) to read energy through zeus-apple-silicon without sudo"
        )
        return found
    stream = PowermetricsStream()
    # Each sensor closes the shared stream; terminate() twice is harmless.
    found.sensors.extend(PowermetricsPower(stream, name) for _, name in _POWERMETRICS_FIELDS)
    return found

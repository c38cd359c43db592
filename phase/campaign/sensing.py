"""Which sensors a campaign reads: discovery from the command line's options, and the
adapter between a sampler window and the decode callbacks."""

from __future__ import annotations

from dataclasses import dataclass

from phase.errors import UsageProblem
from phase.results import SensorTrace, SensorWindow, UnavailableBackend
from phase.sensors import Discovery, Window, discover, jetson, meter, rapl


@dataclass(frozen=True)
class SensorOptions:
    """`use` False records no sensor at all (say so in the file); `meters` are FILE:SCOPE:TAU
    specs of external meter traces; the roots point discovery at other sysfs trees."""

    use: bool = True
    meters: tuple[str, ...] = ()
    rapl_root: str = str(rapl.DEFAULT_ROOT)
    hwmon_root: str = str(jetson.DEFAULT_ROOT)


def discover_sensors(options: SensorOptions) -> Discovery:
    """Every sensor the options allow. A meter the user named explicitly is not optional:
    one that cannot be read is bad input (exit 2) before anything is written."""
    if not options.use:
        return Discovery(unavailable=[
            UnavailableBackend(backend="all", reason="sensors disabled with --no-sensor")
        ])
    found = discover(rapl_root=options.rapl_root, hwmon_root=options.hwmon_root,
                     meters=list(options.meters))
    problems = [u.reason for u in found.unavailable if u.backend == meter.BACKEND]
    if options.meters and problems:
        found.close()
        raise UsageProblem(f"--meter: {'; '.join(problems)}")
    return found


class WindowCallbacks:
    """Adapts a sampler window (or its absence: no sensors) to the decode callbacks."""

    def __init__(self, window: Window | None) -> None:
        self.window = window
        self.stopped = False

    def start(self) -> None:
        if self.window is not None:
            self.window.start()

    def stop(self) -> None:
        """Close the window; a second call (the run's failure path after the decode's own
        end callback) does nothing."""
        if self.window is not None and not self.stopped:
            self.stopped = True
            self.window.stop()

    def outcome(self) -> tuple[list[SensorWindow], list[SensorTrace]]:
        if self.window is None:
            return [], []
        windows, traces = self.window.result()
        return list(windows), list(traces)

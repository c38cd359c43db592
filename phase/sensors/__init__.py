"""Energy sensors (one module per backend) and the sampler that reads them around runs.

    found = discover(rapl_root=..., hwmon_root=..., meters=["wall.csv:wall:1.0"])
    choice, why = primary.choose_primary(found.sensors, primary.Placement("cpu"))
    sampler = Sampler(found.sensors, hz=20.0); sampler.start()
    infos = sampler.sensor_infos()
    win = sampler.begin(idle_s=2.0); win.start(); ...; win.stop()
    windows, traces = win.result()
    sampler.close()

A replayed snapshot stands in for the machine: `m, roots = replay.machine(replay.load(p))`,
then `discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=m)`.
"""

from phase.sensors.core.base import PostHocSensor, Probe, ReadError, Reading, Sensor, now
from phase.sensors.core.energy import Limits, Series
from phase.sensors.core.post_hoc import WindowEdges, align_post_hoc
from phase.sensors.core.sampler import (
    Sampler,
    UpdatePeriod,
    Window,
)
from phase.sensors.discovery import Discovery, Machine, assert_publishable, discover
from phase.sensors.meter.meter import MeterSpec, MeterTrace, parse_meter_spec

__all__ = [
    "Discovery",
    "Limits",
    "Machine",
    "MeterSpec",
    "MeterTrace",
    "PostHocSensor",
    "Probe",
    "ReadError",
    "Reading",
    "Sampler",
    "Sensor",
    "Series",
    "UpdatePeriod",
    "Window",
    "WindowEdges",
    "align_post_hoc",
    "assert_publishable",
    "discover",
    "now",
    "parse_meter_spec",
]

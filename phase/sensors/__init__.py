"""Energy sensors (one module per backend) and the sampler that reads them around runs.

    found = discover(rapl_root=..., hwmon_root=..., meters=["wall.csv:wall:1.0"])
    sampler = Sampler(found.sensors, hz=20.0); sampler.start()
    infos = sampler.sensor_infos()
    win = sampler.begin(idle_s=2.0); win.start(); ...; win.stop()
    windows, traces = win.result()
    sampler.close()
"""

from phase.sensors.base import PostHocSensor, Probe, ReadError, Reading, Sensor, now
from phase.sensors.discovery import Discovery, assert_publishable, discover
from phase.sensors.energy import Limits, Series
from phase.sensors.meter import MeterSpec, MeterTrace, parse_meter_spec
from phase.sensors.sampler import (
    Sampler,
    UpdatePeriod,
    Window,
    WindowEdges,
    align_post_hoc,
)

__all__ = [
    "Discovery",
    "Limits",
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

"""Sensor checks on a real GPU machine, as one script (the device run of issue 17).

Writes into OUT (default ./device-out): `snapshot.json` (`phase sensors --snapshot` of this
machine), `survey.json` / `survey.txt` (`phase sensors --sample 10`, with the GPU busy for
part of the window so the counters see a step), `replay.txt` (the snapshot replayed here),
and `windows.txt` (short windows under load: energy, edge error, NVML's own mean power).

It uses the library, not the `phase` command, so it needs only pydantic besides phase (the
machine may lack the site-building packages), and torch for the GPU load (optional).

    PYTHONPATH=. python3 bench/device_sensors.py OUT
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from phase.sensors import Sampler, discover
from phase.sensors.replay import replay, snapshot
from phase.sensors.report import format_survey, survey

LOAD = """
import sys, time
import torch
time.sleep(float(sys.argv[1]))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""


def gpu_load(delay_s: float, seconds: float) -> subprocess.Popen[bytes] | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    return subprocess.Popen([sys.executable, "-c", LOAD, str(delay_s), str(seconds)])


def short_windows(out: Path) -> None:
    found = discover()
    lines = []
    with Sampler(found.sensors, hz=20.0) as sampler:
        load = gpu_load(0.0, 30.0)
        time.sleep(3.0)  # let the GPU reach its loaded clocks
        for seconds in (0.25, 0.5, 1.0, 2.0, 4.0):
            win = sampler.begin(idle_s=0.5)
            win.start()
            time.sleep(seconds)
            win.stop()
            for w in win.result()[0]:
                lines.append(f"{seconds:5.2f} s  {w.sensor:40s} energy {w.energy_j} J  "
                             f"edge error {w.edge_error_j} J  mean {w.mean_power_w} W  "
                             f"samples {w.samples}  reason {w.energy_reason}")
        if load is not None:
            load.kill()
        infos = sampler.sensor_infos()
    lines += [json.dumps(i.model_dump()) for i in infos]
    (out / "windows.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "device-out")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    data = snapshot.take(snapshot.default_roots(),
                         {"accelerator": "cuda", "note": "device run without llama.cpp"})
    (out / "snapshot.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"snapshot in {time.time() - t0:.1f} s")

    load = gpu_load(4.0, 15.0)  # idle through the probe and idle window, then a step
    result = survey(discover(), hz=20.0, sample_s=10.0, build="cuda")
    if load is not None:
        load.wait()
    (out / "survey.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "survey.txt").write_text(format_survey(result) + "\n")
    print(format_survey(result))

    machine, roots = replay.machine(replay.load(out / "snapshot.json"))
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    replayed = survey(found, hz=20.0, sample_s=2.0, build="cuda", env=data.get("env", {}),
                      cuda_gpus=replay.cuda_gpus(data))
    (out / "replay.txt").write_text(format_survey(replayed) + "\n")
    print(format_survey(replayed))

    short_windows(out)


if __name__ == "__main__":
    main()

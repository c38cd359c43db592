"""`phase sensors` on fixture sysfs trees and on this machine's real (possibly empty) sysfs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from phase.cli import run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "sensors"


@pytest.mark.slow  # probes this machine's sensors for real: ~5 s of wall clock
def test_sensors_table_lists_found_and_unavailable(sysfs_tree: Callable[..., Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    powercap, hwmon = sysfs_tree("powercap"), sysfs_tree("hwmon")
    meter = f"{FIXTURES / 'wall_meter.csv'}:wall:1.0"
    # --probe 1: the fixture's files never change, so the default slow probe waited its whole
    # 5 s for updates that this table does not show.
    code = run_cli(["sensors", "--rapl-root", str(powercap), "--hwmon-root", str(hwmon),
                    "--meter", meter, "--probe", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Energy sensors found: 7" in out
    for name in ("rapl:package-0", "rapl:psys", "ina3221:VDD_IN", "meter:wall_meter"):
        assert name in out
    assert "6.000 W" in out  # VDD_IN read live: 5 V x 1.2 A
    assert "84213.377 J" in out  # package-0 counter read live
    assert "Unavailable:" in out and ("apple:" in out or "nvml:" in out)


def test_sensors_json_with_a_sampled_window(sysfs_tree: Callable[..., Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    hwmon = sysfs_tree("hwmon")
    code = run_cli(["sensors", "--json", "--sample", "0.2", "--rapl-root", "/nonexistent",
                    "--hwmon-root", str(hwmon)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["sample_s"] == 0.2
    rows = {r["name"]: r for r in data["sensors"]}
    assert set(rows) == {"ina3221:VDD_IN", "ina3221:VDD_CPU_GPU_CV", "ina3221:VDD_SOC"}
    window = rows["ina3221:VDD_CPU_GPU_CV"]["window"]
    assert window["mean_power_w"] == pytest.approx(2.0) and window["energy_j"] > 0
    assert rows["ina3221:VDD_IN"]["scope"] == "module"
    reasons = {u["backend"]: u["reason"] for u in data["unavailable"]}
    assert "/nonexistent" in reasons["rapl"]


def test_sensors_with_nothing_found_says_so_and_exits_0(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]):
    code = run_cli(["sensors", "--rapl-root", str(tmp_path / "none"),
                    "--hwmon-root", str(tmp_path / "none")])
    out = capsys.readouterr().out
    assert code == 0
    if "Energy sensors found" in out:
        pytest.skip("this machine has a GPU or other sensor that NVML/Apple found")
    assert "No energy sensors found" in out
    assert "rapl:" in out and "jetson-ina3221:" in out and "nvml:" in out


def test_sensors_rejects_a_bad_meter_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["sensors", "--meter", "wall.csv"]) == 2
    assert "FILE:SCOPE:TAU" in capsys.readouterr().err

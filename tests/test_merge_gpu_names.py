"""`phase merge` of shards from hosts whose GPU sensors are named by PCI bus id (amdgpu,
i915/xe): two identical machines whose cards sit in other slots merge, each shard's own
names kept in `merged_from`; sensors that differ beyond the slot are refused, never mixed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from shard_files import IDENTITY, edit, write_shards

from phase.cli import main
from phase.results import HostInfo, load_raw
from phase.validate import validate_file


def merge(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["merge", *map(str, args)])


def on_card(path: Path, backend: str, slot: str, suffix: str = "power") -> str:
    """Rename the shard's chip sensor as `backend` names a card in PCI slot `slot`."""
    results = load_raw(path)
    name = f"{backend}:{slot}:{suffix}"
    sensors = [s.model_copy(update={"name": name, "device": slot, "backend": backend})
               if s.name == "chip" else s for s in results.sensors]
    runs = [r.model_copy(update={"energy": [w.model_copy(update={"sensor": name})
                                            if w.sensor == "chip" else w for w in r.energy]})
            for r in results.runs]
    edit(path, sensors=sensors, runs=runs)
    return name


def second_host(path: Path) -> None:
    edit(path, hosts=[HostInfo(hostname="node1", host_class="fixture-2c", identity=IDENTITY,
                               shards=[1])])


def test_same_cards_in_other_slots_merge_and_each_shard_keeps_its_names(
        tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    first = on_card(shards[0], "amdgpu", "0000:03:00.0")
    second = on_card(shards[1], "amdgpu", "0000:0c:00.0")
    second_host(shards[1])
    out = tmp_path / "merged.json"
    result = merge(out, *shards)
    assert result.exit_code == 0, result.output
    merged = load_raw(out)
    assert {w.sensor for r in merged.runs for w in r.energy} == {first}
    # the merged sensor names no slot; each shard's own name and slot are on record
    assert [s.device for s in merged.sensors if s.name == first] == [None]
    assert merged.merged_from[1].sensor_names == {first: second}
    assert merged.merged_from[1].sensor_devices == {first: "0000:0c:00.0"}
    assert merged.merged_from[0].sensor_devices == {first: "0000:03:00.0"}
    # Nothing the merge made blocks it. (amdgpu is not yet on the validator's publishable
    # allow-list, phase.validate.settings.PUBLISHABLE_BACKENDS: that rule is the only one.)
    blocking = {f.rule for f in validate_file(out).findings if f.severity == "blocking"}
    assert blocking <= {"backend"}


def refused(tmp_path: Path, shards: list[Path]) -> str:
    out = tmp_path / "merged.json"
    result = merge(out, *shards)
    assert result.exit_code == 2 and not out.exists(), result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    return result.output


def test_another_reading_of_the_card_is_refused(tmp_path: Path) -> None:
    # power1_input on one host, power1_average on the other: not the same figure
    shards = write_shards(tmp_path, count=2)
    on_card(shards[0], "amdgpu", "0000:03:00.0")
    on_card(shards[1], "amdgpu", "0000:0c:00.0", suffix="power-average")
    second_host(shards[1])
    assert "declared sensors differs" in refused(tmp_path, shards)


def test_another_vendor_in_the_same_slot_is_refused(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    on_card(shards[0], "amdgpu", "0000:03:00.0")
    on_card(shards[1], "intel_gpu", "0000:03:00.0")
    second_host(shards[1])
    assert "declared sensors differs" in refused(tmp_path, shards)

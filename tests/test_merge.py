"""`phase merge`: shards of one campaign join into one valid file; everything else is refused
with exit 2, naming what differs, and nothing is written or changed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from factories import make_model, make_provenance, make_sensor, make_summary, write_results
from shard_files import CAMPAIGN_ID, IDENTITY, edit, structure, write_shards

from phase.cli import main
from phase.publish.site.build import SitePaths, build_site
from phase.results import HostInfo, load_raw
from phase.validate import validate_file


def merge(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["merge", *map(str, args)])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_merge_joins_the_shards_into_one_complete_campaign(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    before = {p: digest(p) for p in shards}
    out = tmp_path / "merged.json"
    result = merge(out, *shards)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    merged = load_raw(out)
    (tmp_path / "whole").mkdir()
    whole = write_shards(tmp_path / "whole", count=1)[0]  # the same campaign, one part
    assert structure(merged) == structure(load_raw(whole))
    assert merged.id == "merged" and merged.campaign_id == CAMPAIGN_ID and merged.shard is None
    assert [(h.hostname, h.shards) for h in merged.hosts] == [("node0", [0]), ("node1", [1])]
    assert {r.prompt: r.host for r in merged.runs} == {"p1": "node0", "p2": "node1"}
    assert [r.order for r in merged.runs] == sorted(r.order for r in merged.runs)
    assert [(m.file, m.sha256, m.shard.index) for m in merged.merged_from] == [
        (p.name, before[p], i) for i, p in enumerate(shards)]
    assert merged.provenance.hostname == "node0, node1"
    # Inputs are only read.
    assert {p: digest(p) for p in shards} == before
    # The merged file is an ordinary complete campaign to the validator.
    report = validate_file(out)
    assert not report.blocking
    assert [f for f in report.findings if f.rule == "completeness"] == []


def test_a_shard_alone_is_complete_for_its_own_part(tmp_path: Path) -> None:
    shard = write_shards(tmp_path, count=2)[1]
    report = validate_file(shard)
    assert [f.message for f in report.findings if f.rule == "completeness"] == []
    # ...but not when a run of its part is missing.
    runs = load_raw(shard).runs
    edit(shard, runs=runs[1:])
    found = [f for f in validate_file(shard).findings if f.rule == "completeness"]
    assert len(found) == 1 and "missing repeat" in found[0].message


def test_merge_order_of_arguments_does_not_matter(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=3, prompts=("a", "b", "c"))
    assert merge(tmp_path / "x.json", *shards).exit_code == 0
    assert merge(tmp_path / "y.json", *reversed(shards)).exit_code == 0
    x, y = load_raw(tmp_path / "x.json"), load_raw(tmp_path / "y.json")
    assert x.model_dump(exclude={"id"}) == y.model_dump(exclude={"id"})


def _host(**identity: Any) -> list[HostInfo]:
    return [HostInfo(hostname="node1", host_class="fixture-2c",
                     identity=IDENTITY.model_copy(update=identity), shards=[1])]


EDITS: dict[str, tuple[dict[str, Any], str]] = {
    "campaign id": ({"campaign_id": "fixture-ffffffffffff"}, "campaign id differs"),
    "experiment": ({"experiment": "other"}, "experiment differs"),
    "model sha256": ({"models": [make_model(sha256="1" * 64)]}, "target model sha256 differs"),
    "phase version": ({"provenance": make_provenance(phase_version="9.9.9")},
                      "phase version (and commit) differs"),
    "phase commit": ({"provenance": make_provenance(git_commit="a" * 40)},
                     "phase version (and commit) differs"),
    "llama-cpp-python version": ({"provenance": make_provenance(
        llama_cpp_python_version="0.3.99")}, "llama-cpp-python version differs"),
    "llama.cpp build": ({"provenance": make_provenance(
        llama_cpp_system_info="llama 0.6.0 | CPU : AVX2 = 1")}, "llama.cpp build differs"),
    "extra CPU buffers": ({"provenance": make_provenance(cpu_extra_buffers=False)},
                          "kernels used (extra CPU buffers, weight buffers) differs"),
    "weight buffers": ({"provenance": make_provenance(weight_buffers=["CPU_REPACK"])},
                       "kernels used (extra CPU buffers, weight buffers) differs"),
    "threads": ({"provenance": make_provenance(threads=4)}, "threads differs"),
    "cpu model": ({"hosts": _host(cpu_model="Other CPU")}, "host class (cpu_model) differs"),
    "cores": ({"hosts": _host(cpu_cores=64)}, "host class (cpu_cores) differs"),
    "memory": ({"hosts": _host(ram_gib=512)}, "host class (ram_gib) differs"),
    "gpu model": ({"hosts": _host(gpus=["NVIDIA H200"])}, "host class (gpus) differs"),
    "gpu driver": ({"hosts": _host(gpu_driver="550.54.15")}, "host class (gpu_driver) differs"),
    "accelerator": ({"hosts": _host(accelerator="cuda")}, "host class (accelerator) differs"),
    "sensors": ({"sensors": [make_sensor(smoothing_s=1.0)]}, "declared sensors differs"),
    # A shard resumed on a machine of another class lists both hosts: refused too.
    "resumed elsewhere": ({"hosts": [*_host(), *_host(cpu_model="Other CPU")]},
                          "host class (cpu_model) differs"),
    "not a shard": ({"shard": None}, "is not a shard"),
    "incomplete": ({"status": "interrupted"}, "not complete"),
}


@pytest.mark.parametrize("what", sorted(EDITS))
def test_merge_refuses_shards_that_differ(tmp_path: Path, what: str) -> None:
    changes, needle = EDITS[what]
    shards = write_shards(tmp_path, count=2)
    edit(shards[1], **changes)
    _refused(tmp_path, shards, needle)


def _refused(tmp_path: Path, inputs: list[Path], needle: str) -> Result:
    before = {p: digest(p) for p in inputs}
    out = tmp_path / "merged.json"
    result = merge(out, *inputs)
    assert result.exit_code == 2, result.output
    assert needle in result.output, result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1  # one line
    assert not out.exists()
    assert {p: digest(p) for p in inputs} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    return result


def test_config_refusal_names_the_setting(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    config = load_raw(shards[1]).config.model_copy(update={"seed": 5, "tokens": 17})
    edit(shards[1], config=config)
    _refused(tmp_path, shards, "config differs in config.tokens, config.seed")


def test_hosts_that_differ_only_by_name_merge(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    edit(shards[1], hosts=_host())  # same identity, another name: fine
    assert merge(tmp_path / "m.json", *shards).exit_code == 0


def test_missing_and_duplicate_shards_are_refused(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=3, prompts=("a", "b", "c"))
    _refused(tmp_path, shards[:2], "shard(s) 2 of 3 missing")
    copy = tmp_path / "copy-of-shard-0.json"
    shutil.copyfile(shards[0], copy)
    result = _refused(tmp_path, [*shards, copy], "shard 0 given twice")
    assert copy.name in result.output


def test_plain_references_must_agree_where_shards_share_a_prompt(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2, prompts=("p1",), repeats=2)  # split by repeats
    assert load_raw(shards[0]).shard.split == "repeats"  # type: ignore[union-attr]
    refs = load_raw(shards[1]).references
    edit(shards[1], references=[refs[0].model_copy(update={"output_sha256": "f" * 64})])
    _refused(tmp_path, shards, "plain reference of prompt 'p1' differs")


def test_a_run_outside_its_shard_is_refused(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    stray = load_raw(shards[0]).runs[0]
    edit(shards[1], runs=[*load_raw(shards[1]).runs, stray])
    _refused(tmp_path, shards, "outside its shard's part")


def test_output_is_never_replaced_and_must_be_new(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    out = tmp_path / "taken.json"
    out.write_text("mine\n")
    result = merge(out, *shards)
    assert result.exit_code == 2 and "already exists" in result.output
    assert out.read_text() == "mine\n"
    result = merge(tmp_path / "no-such-dir" / "m.json", *shards)
    assert result.exit_code == 2 and "does not exist" in result.output
    result = merge(shards[0], *shards)
    assert result.exit_code == 2 and "is one of the inputs" in result.output


def test_unreadable_inputs_are_bad_input(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 2, ')
    result = merge(tmp_path / "m.json", shards[0], broken)
    assert result.exit_code == 2 and "broken.json" in result.output and "JSON" in result.output
    summary = write_results(make_summary(), tmp_path / "summary.json")
    result = merge(tmp_path / "m.json", shards[0], summary)
    assert result.exit_code == 2 and "summary file" in result.output
    result = merge(tmp_path / "m.json", shards[0], tmp_path / "absent.json")
    assert result.exit_code == 2 and "absent.json: no such file" in result.output
    assert not (tmp_path / "m.json").exists()


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_merged_file_publishes_like_a_single_host_campaign(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    shards = write_shards(tmp_path, count=2)
    assert merge(results / "speculative-fixture-merged.json", *shards).exit_code == 0
    notes = tmp_path / "notes"
    notes.mkdir()
    paths = SitePaths.default(Path(__file__).resolve().parent.parent, results_dir=results,
                              notes_dir=notes, docs_dir=tmp_path / "docs",
                              site_dir=tmp_path / "site", published_dir=tmp_path / "published")
    built = build_site(paths)
    assert [Path(r.file).name for r in built.reports] == ["speculative-fixture-merged.json"]
    page = (paths.site_dir / "raw" / "speculative-fixture-merged.html").read_text()
    assert page.count('class="phase-run"') == 8
    hosts = (paths.site_dir / "hosts" / "fixture.html").read_text()
    assert "<td>node0, node1</td>" in hosts and "<td>fixture-2c</td>" in hosts


def _on_gpu(path: Path, uuid: str, suffix: str = "energy") -> str:
    """Rename the shard's chip sensor as NVML names it on a host whose GPU has `uuid`."""
    results = load_raw(path)
    name = f"nvml:{uuid[:12]}:{suffix}"
    sensors = [s.model_copy(update={"name": name, "device": uuid}) if s.name == "chip" else s
               for s in results.sensors]
    runs = [r.model_copy(update={"energy": [w.model_copy(update={"sensor": name})
                                            if w.sensor == "chip" else w for w in r.energy]})
            for r in results.runs]
    edit(path, sensors=sensors, runs=runs)
    return name


def test_gpu_hosts_whose_sensors_are_named_by_uuid_merge(tmp_path: Path) -> None:
    # Every GPU has its own UUID, so the same sensor has another name on every host of a class.
    shards = write_shards(tmp_path, count=2)
    first = _on_gpu(shards[0], "GPU-aaaaaaaa-1111-2222-3333-444444444444")
    second = _on_gpu(shards[1], "GPU-bbbbbbbb-5555-6666-7777-888888888888")
    edit(shards[1], hosts=_host())
    out = tmp_path / "merged.json"
    result = merge(out, *shards)
    assert result.exit_code == 0, result.output
    merged = load_raw(out)
    assert {w.sensor for r in merged.runs for w in r.energy} == {first}
    assert [s.device for s in merged.sensors if s.name == first] == [None]  # hosts differ
    assert merged.merged_from[1].sensor_names == {first: second}
    assert merged.merged_from[1].sensor_devices == {
        first: "GPU-bbbbbbbb-5555-6666-7777-888888888888"}
    assert merged.merged_from[0].sensor_names == {}
    assert not validate_file(out).blocking


def test_gpu_sensors_that_differ_beyond_the_uuid_are_refused(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    _on_gpu(shards[0], "GPU-aaaaaaaa-1111-2222-3333-444444444444")
    _on_gpu(shards[1], "GPU-bbbbbbbb-5555-6666-7777-888888888888", suffix="power")
    _refused(tmp_path, shards, "declared sensors differs")

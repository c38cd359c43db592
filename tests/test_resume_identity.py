"""Resume compares the whole measurement identity and refuses any difference, listing it, before
a model loads, with the file byte-identical; a read-only file is not resumed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from factories import make_model, make_provenance, make_results, make_sensor, replaced
from sandbox import as_interrupted, assert_one_line_error, run_phase
from short_prompts import PHASE as SHORT

from phase.campaign.identity import differences
from phase.results import ResultsFile, load_raw

# --threads 2 / a 2-thread plan: refused on a worker pinned to one CPU (tests/conftest.py).
pytestmark = pytest.mark.cores

# --no-profile: the cost profile (most of a small campaign's time) is not what these tests are
# about; test_campaign.py and test_profile_campaign.py run campaigns with it.
SMALL = ["--quick", "--no-sensor", "--no-profile", "--prompts", "code", "--strategies",
         "plain,draft-2", "--tokens", "8", "--repeats", "2", "--cooldown", "0",
         "--idle-window", "0"]


def _base() -> ResultsFile:
    return make_results(sensors=[make_sensor("chip"), make_sensor("board", scope="board")])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda r: replaced(r, provenance=make_provenance(threads=1)),
         "provenance.threads: 2 → 1"),
        (lambda r: replaced(r, provenance=make_provenance(threads_batch=4)),
         "provenance.threads_batch: 2 → 4"),
        (lambda r: replaced(r, provenance=make_provenance(phase_version="0.2.0")),
         "provenance.phase_version: '0.1.0' → '0.2.0'"),
        (lambda r: replaced(r, provenance=make_provenance(llama_cpp_python_version="0.3.37")),
         "provenance.llama_cpp_python_version: none → '0.3.37'"),
        (lambda r: replaced(r, provenance=make_provenance(host_class="x86_64-64c")),
         "provenance.host_class:"),
        (lambda r: replaced(r, models=[make_model(sha256="1" * 64)]),
         "models.target.sha256: 000000000000 → 111111111111"),
        (lambda r: replaced(r, sensors=[make_sensor("chip")]), "sensors: board removed"),
        (lambda r: replaced(r, sensors=[*r.sensors, make_sensor("wall", scope="wall")]),
         "sensors: wall added"),
        (lambda r: replaced(r, sensors=[make_sensor("chip", smoothing_s=1.0), r.sensors[1]]),
         "sensors.chip.smoothing_s: 0.0 → 1.0"),
        (lambda r: replaced(r, sensors=[make_sensor("chip", max_power_w=50.0), r.sensors[1]]),
         "sensors.chip.max_power_w: none → 50.0"),
        (lambda r: replaced(r, sensors=[make_sensor("chip", backend="nvml"), r.sensors[1]]),
         "sensors.chip.backend:"),
        (lambda r: replaced(r, sensors=[r.sensors[0], make_sensor("board", scope="wall")]),
         "sensors.board.scope: 'board' → 'wall'"),
        (lambda r: replaced(r, config=r.config.model_copy(update={"tokens": 32})),
         "config.tokens: 16 → 32"),
    ],
)
def test_every_part_of_the_identity_is_compared(change, expected: str) -> None:  # type: ignore[no-untyped-def]
    old = _base()
    diffs = differences(old, change(old), loaded=True)
    assert any(d.startswith(expected) for d in diffs), diffs


def test_measured_values_and_facts_known_after_loading() -> None:
    old = _base()
    # The update period is measured afresh each time: not part of the identity.
    remeasured = replaced(old, sensors=[make_sensor("chip", update_period_s=0.5), old.sensors[1]])
    assert differences(old, remeasured, loaded=True) == []
    # Another machine of the same class may continue a campaign (w-fleet: runs record
    # their host): the hostname alone is not a different setup.
    moved = replaced(old, provenance=make_provenance(hostname="other"))
    assert differences(old, moved, loaded=True) == []
    # The llama.cpp system info is only known once a model is loaded.
    built = replaced(old, provenance=make_provenance(llama_cpp_system_info="AVX2 = 1"))
    assert differences(old, built, loaded=False) == []
    # So are the buffers the weights went into; the CPU's flags are known before.
    buffers = replaced(old, provenance=make_provenance(weight_buffers=["CPU_REPACK"]))
    assert differences(old, buffers, loaded=False) == []
    assert differences(old, buffers, loaded=True) == \
        ["provenance.weight_buffers: none → ['CPU_REPACK']"]
    flags = replaced(old, provenance=make_provenance(cpu_flags=["amx_int8"]))
    assert [d.split(":")[0] for d in differences(old, flags, loaded=False)] == \
        ["provenance.cpu_flags"]
    assert differences(old, built, loaded=True) != []


@pytest.fixture(scope="module")
def renamed_model_path(test_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test model with one letter of its `general.name` changed: the same weights and
    vocabulary (a draft still pairs with it), another sha256."""
    import struct

    data = bytearray(test_model_path.read_bytes())
    key = b"general.name"
    at = data.find(key) + len(key)
    gguf_string = 8
    assert at >= len(key) and struct.unpack_from("<I", data, at)[0] == gguf_string
    value_at = at + 4 + 8  # the type, then the string's u64 length
    data[value_at] = ord("X") if data[value_at] != ord("X") else ord("Y")
    out = tmp_path_factory.mktemp("renamed") / "smollm2-renamed.gguf"
    out.write_bytes(bytes(data))
    return out


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a real campaign interrupted after its first run (status running, one run)."""
    out = tmp_path_factory.mktemp("resume") / "r.json"
    done = run_phase(["measure", "speculative", *SMALL, "--threads", "2", "-o", str(out)],
                     phase=SHORT)
    assert done.returncode == 0, done.stderr
    return as_interrupted(out)


@pytest.mark.model
@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--threads", "1"], "provenance.threads: 2 → 1"),
        (["--threads", "2", "--tokens", "9"], "config.tokens: 8 → 9"),
        (["--threads", "2", "--target", "{renamed}"], "models.target.sha256"),
        (["--threads", "2", "--meter", "{meter}:wall:1.0"], "sensors: "),
    ],
)
def test_resume_with_a_different_setup_is_refused_before_loading(
    tmp_path: Path, interrupted: bytes, extra: list[str], needle: str, repo_root: Path,
    renamed_model_path: Path,
) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    meter = repo_root / "tests" / "fixtures" / "sensors" / "wall_meter.csv"
    args = [a.replace("{meter}", str(meter)).replace("{renamed}", str(renamed_model_path))
            for a in extra]
    sensors = [a for a in SMALL if a != "--no-sensor"] if "--meter" in args else SMALL
    proc = run_phase(["measure", "speculative", *sensors, *args, "--resume", str(out)],
                     phase=SHORT)
    assert_one_line_error(proc, 2, str(out.name), "cannot resume", needle)
    assert "loading" not in proc.stderr
    assert out.read_bytes() == interrupted


@pytest.mark.model
def test_resume_with_the_same_setup_completes_and_keeps_the_mode(
    tmp_path: Path, interrupted: bytes,
) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    out.chmod(0o640)
    proc = run_phase(["measure", "speculative", *SMALL, "--threads", "2", "--resume", str(out)],
                     phase=SHORT)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    results = load_raw(out)
    assert results.status == "complete" and len(results.runs) == 4


@pytest.mark.model
def test_a_read_only_file_is_not_resumed(tmp_path: Path, interrupted: bytes) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    out.chmod(0o444)
    proc = run_phase(["measure", "speculative", *SMALL, "--threads", "2", "--resume", str(out)],
                     phase=SHORT)
    assert_one_line_error(proc, 2, str(out), "read-only", "chmod u+w")
    assert stat.S_IMODE(out.stat().st_mode) == 0o444
    assert out.read_bytes() == interrupted

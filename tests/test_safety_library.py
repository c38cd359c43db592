"""Issue 13's classes through the library, as the CLI tests (test_bad_input, test_claim,
test_preload, test_resume_identity, test_model_cache) check them through `phase`: the library
raises one-line errors with the exit code the CLI will use, refuses before a model loads
(`prepare` tells its observer "loading …" just before the weights load), leaves a refused file
byte-identical and releases its claim, and a write that fails mid-campaign keeps what was
saved."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from factories import make_results, write_results
from sandbox import as_interrupted
from short_prompts import SPECULATIVE

from phase.base.errors import PhaseError, UsageProblem
from phase.campaign import (
    DEFAULT_PLAN,
    CampaignPlan,
    Destination,
    QuietObserver,
    SensorOptions,
    discover_sensors,
    prepare,
)
from phase.models.sources import TEST_MODEL, ModelError, resolve, verify
from phase.results import ResultsError, load_raw
from phase.storage.claim import FileBusy, lock_path
from phase.storage.writing import WriteFailed, atomic_write_text
from phase.validate import exit_code, validate_file

# --threads 2 / a 2-thread plan: refused on a worker pinned to one CPU (tests/conftest.py).
pytestmark = pytest.mark.cores

# profile=False: the cost profile was most of the one campaign this module runs, and what the
# tests read of it (refusals before loading, a full disk, a resume) is not the profile's; as
# test_resume_identity's --no-profile.
PLAN = replace(
    DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
    strategies=("plain", "draft-2"), tokens=8, repeats=2, cooldown_s=0.0, idle_window_s=0.0,
    threads=2, disturbed_load=None, quiet_check_s=0.0, profile=False,
)


class Recorder(QuietObserver):
    """Keeps prepare's messages: "loading …" is the last one before the weights load."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        self.messages.append(text)

    @property
    def loaded(self) -> bool:
        return any(m.startswith("loading") for m in self.messages)


def _refused(out: Path, plan: CampaignPlan = PLAN, resume: bool = False) -> PhaseError:
    """prepare's refusal of this campaign; asserts it came before any model loaded and that
    the file's claim was given back."""
    observer = Recorder()
    with pytest.raises(PhaseError) as info:
        prepare(SPECULATIVE, plan, Destination(out, resume=resume),
                discover_sensors(SensorOptions(use=False)), observer)
    assert not observer.loaded, observer.messages
    assert not lock_path(out).exists()
    assert "\n" not in str(info.value)
    return info.value


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real campaign's file, cut back to an interrupted one with one run (made through the
    library: prepare + run)."""
    out = tmp_path_factory.mktemp("lib-resume") / "r.json"
    with prepare(SPECULATIVE, PLAN, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as campaign:
        campaign.run()
    return as_interrupted(out)


@pytest.mark.model
@pytest.mark.parametrize(
    ("change", "needle"),
    [({"threads": 1}, "provenance.threads: 2 → 1"), ({"tokens": 9}, "config.tokens: 8 → 9")],
)
def test_prepare_refuses_a_different_resume_before_loading(
        tmp_path: Path, interrupted: bytes, change: dict[str, int], needle: str) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    error = _refused(out, replace(PLAN, **change), resume=True)  # type: ignore[arg-type]
    assert error.exit_code == 2 and "cannot resume" in str(error) and needle in str(error)
    assert out.read_bytes() == interrupted


@pytest.mark.model
def test_prepare_refuses_a_read_only_resume_and_keeps_its_mode(
        tmp_path: Path, interrupted: bytes) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    out.chmod(0o444)
    error = _refused(out, resume=True)
    assert error.exit_code == 2 and "read-only" in str(error)
    assert (out.stat().st_mode & 0o777) == 0o444 and out.read_bytes() == interrupted


@pytest.mark.model
def test_prepare_refuses_a_file_another_process_is_writing(tmp_path: Path,
                                                          interrupted: bytes) -> None:
    out = tmp_path / "r.json"
    out.write_bytes(interrupted)
    hold = ("import sys; from phase.storage.claim import Claim; c = Claim.take(sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read(); c.release()")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(out)], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        observer = Recorder()
        with pytest.raises(FileBusy) as info:
            prepare(SPECULATIVE, PLAN, Destination(out, resume=True),
                    discover_sensors(SensorOptions(use=False)), observer)
        assert not observer.loaded
        assert info.value.exit_code == 2 and f"pid {holder.pid}" in str(info.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert out.read_bytes() == interrupted


@pytest.mark.model
@pytest.mark.parametrize("where", ["missing-dir", "existing-file", "too-small-context"])
def test_prepare_refuses_bad_output_and_fit_before_loading(tmp_path: Path, where: str) -> None:
    plan = PLAN
    out = tmp_path / "new.json"
    if where == "missing-dir":
        out = tmp_path / "nodir" / "new.json"
    elif where == "existing-file":
        out.write_text("precious")
    else:
        plan = replace(PLAN, n_ctx=64, tokens=32)  # the prompt's 42 tokens + 32 do not fit
    error = _refused(out, plan)
    assert error.exit_code == 2
    assert {"missing-dir": "does not exist", "existing-file": "already exists",
            "too-small-context": "context 64"}[where] in str(error)
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["new.json"] if where == "existing-file" else [])
    if where == "existing-file":
        assert out.read_text() == "precious"


# A CampaignWriter under a file-size limit (a full disk) in its own process: the library's
# WriteFailed says how many runs the file still holds, and that file is valid.
FULL_DISK = textwrap.dedent(
    """
    import resource, signal, sys
    sys.path.insert(0, sys.argv[3])
    from factories import make_results
    from phase.results import CampaignWriter
    from phase.storage.writing import WriteFailed
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    full = make_results()
    writer = CampaignWriter(sys.argv[1], full.model_copy(update={"runs": [],
                                                                 "status": "running"}))
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        for run in full.runs:
            writer.add_run(run)
    except WriteFailed as exc:
        print(exc.exit_code, writer.saved_runs, exc, sep="|")
    """
)


def test_a_full_disk_leaves_the_last_saved_version(tmp_path: Path) -> None:
    full = make_results()
    assert len(full.runs) >= 2
    one_run = full.model_copy(update={"runs": full.runs[:1], "status": "running"})
    limit = len(one_run.model_dump_json(indent=1)) + 200  # room for one run, not for all
    out = tmp_path / "full.json"
    proc = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(out), str(limit), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    code, saved, message = proc.stdout.strip().split("|", 2)
    assert code == "1" and f"{out}" in message and "File too large" in message
    assert f"the {saved} run(s) saved before" in message
    kept = load_raw(out)
    assert kept.status == "running" and len(kept.runs) == int(saved) >= 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("where", ["nodir/x.json", "adir"])
def test_atomic_write_to_a_bad_place_is_exit_2(tmp_path: Path, where: str) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(WriteFailed) as info:
        atomic_write_text(tmp_path / where, "{}")
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]


def test_validate_file_reports_unreadable_files_as_blocking_without_hanging(
        tmp_path: Path) -> None:
    good = write_results(make_results(), tmp_path / "good.json")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff")
    deep = tmp_path / "deep.json"
    deep.write_text("{\"a\":" * 100_000)
    reports = [validate_file(p) for p in (fifo, bad, good, deep)]
    for report in (reports[0], reports[1], reports[3]):
        assert report.results is None
        assert [f.severity for f in report.findings] == ["blocking"]
    assert reports[2].results is not None
    assert exit_code(reports) == 2


def test_models_library_errors_name_the_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageProblem, match=r"missing\.gguf: no such file"):
        verify("./missing.gguf")
    plain = tmp_path / "cache-file"
    plain.write_text("not a directory")
    monkeypatch.setenv("PHASE_CACHE", str(plain))
    with pytest.raises(ModelError) as info:
        resolve("gemma3-270m")
    assert info.value.exit_code == 2 and "cannot create the model cache" in str(info.value)
    assert plain.read_text() == "not a directory"


def test_results_errors_carry_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"schema_version": 2, "schema_version": 2}')
    with pytest.raises(ResultsError) as info:
        load_raw(path)
    assert info.value.exit_code == 2 and "$.schema_version: duplicate key" in str(info.value)

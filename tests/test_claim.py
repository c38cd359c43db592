"""One writer per results file, checked with separate processes: a second campaign on the same
file is refused naming the holder, default names never collide, a dead holder blocks nobody."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from factories import make_results
from sandbox import assert_one_line_error, run_phase
from short_prompts import PHASE as SHORT

from phase.campaign import default_output
from phase.results import CampaignWriter, load_raw
from phase.storage.claim import (
    Claim,
    FileBusy,
    claim_existing,
    claim_new,
    claim_numbered,
    lock_path,
)

# --no-profile: the cost profile is ~100 s of CPU of a quick campaign, and these tests are about
# who may write which file (test_campaign and test_profile_campaign profile).
SMALL = ["--quick", "--no-sensor", "--prompts", "code", "--strategies", "plain,draft-2",
         "--tokens", "8", "--repeats", "2", "--cooldown", "0", "--idle-window", "0",
         "--no-profile"]

HOLDER = textwrap.dedent(
    """
    import sys
    from phase.storage.claim import Claim, claim_numbered
    how, path = sys.argv[1], sys.argv[2]
    claim = claim_numbered(path) if how == "numbered" else Claim.take(path)
    print(claim.path, flush=True)
    sys.stdin.read()  # hold the claim until the test closes our stdin
    claim.release()
    """
)


@contextmanager
def holder(path: Path, how: str = "take") -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another process holding the claim on `path` (as a campaign does while it runs)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, how, str(path)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        claimed = Path(proc.stdout.readline().strip())
        yield proc, claimed
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)


def test_second_writer_in_another_process_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "same.json"
    with holder(out) as (proc, _):
        with pytest.raises(FileBusy) as err:
            Claim.take(out)
        message = str(err.value)
        assert str(out) in message and f"pid {proc.pid}" in message and "-c" in message
        record = json.loads(lock_path(out).read_text())
        assert record["pid"] == proc.pid
    # Released: the sidecar is gone and the file can be claimed again.
    assert not lock_path(out).exists()
    with claim_new(out) as claim:
        assert claim.held


def test_a_killed_holder_blocks_nobody(tmp_path: Path) -> None:
    out = tmp_path / "k.json"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, "take", str(out)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == str(out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert lock_path(out).exists()  # stale sidecar left by kill -9 ...
    with Claim.take(out) as claim:  # ... and no obstacle: the kernel dropped the lock
        assert json.loads(lock_path(out).read_text())["pid"] == os.getpid()
        assert claim.held


def test_numbered_names_are_chosen_atomically(tmp_path: Path) -> None:
    base = tmp_path / "exp-host-2026-01-01.json"
    # The first campaign has claimed the base name but not written anything yet (its models
    # are loading): the second must not pick the same name.
    with holder(base, "numbered") as (_, first):
        assert first == base and not base.exists()
        with claim_numbered(base) as second:
            assert second.path == tmp_path / "exp-host-2026-01-01-2.json"
    (tmp_path / "exp-host-2026-01-01.json").write_text("{}")
    with claim_numbered(base) as third:
        assert third.path.name == "exp-host-2026-01-01-2.json"


def test_claim_new_refuses_an_existing_file_and_resume_a_read_only_one(tmp_path: Path) -> None:
    taken = tmp_path / "taken.json"
    taken.write_text("precious")
    with pytest.raises(Exception, match="already exists"):
        claim_new(taken)
    taken.chmod(0o444)
    with pytest.raises(Exception, match="read-only"):
        claim_existing(taken)
    assert taken.read_text() == "precious" and not lock_path(taken).exists()


def test_writer_creates_exclusively_and_keeps_the_mode_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    header = make_results(runs=[], status="running")
    writer = CampaignWriter(out, header)
    with pytest.raises(FileBusy):
        CampaignWriter.resume(out)  # the writer holds it
    writer.finish("interrupted")
    out.chmod(0o640)
    resumed = CampaignWriter.resume(out)
    resumed.finish("interrupted")
    assert (out.stat().st_mode & 0o777) == 0o640
    assert load_raw(out).status == "interrupted"
    with pytest.raises(Exception, match="already exists"):
        CampaignWriter(out, header)


@pytest.mark.model
def test_two_campaigns_on_one_file_one_is_refused_the_other_completes(tmp_path: Path) -> None:
    out = tmp_path / "same.json"
    first = subprocess.Popen(
        [*SHORT, "measure", "speculative", *SMALL, "--cooldown", "0.5", "-o", str(out)],
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not lock_path(out).exists() or not lock_path(out).read_text():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = run_phase(["measure", "speculative", *SMALL, "-o", str(out)], phase=SHORT)
    assert_one_line_error(second, 2, str(out), f"pid {first.pid}", "measure speculative")
    assert "loading" not in second.stderr  # refused before any model loaded
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    results = load_raw(out)
    assert results.status == "complete" and len(results.runs) == 4


@pytest.mark.model
def test_two_campaigns_without_output_write_two_files(tmp_path: Path) -> None:
    base = default_output("speculative", quick=True, results_dir=tmp_path / "results")
    with holder(base, "numbered") as (_, first):
        assert first == base
        done = run_phase(["measure", "speculative", *SMALL], cwd=tmp_path, phase=SHORT)
    assert done.returncode == 0, done.stderr
    written = Path(tmp_path / done.stdout.strip().splitlines()[-1])
    assert written.name == base.name.replace(".json", "-2.json")
    assert load_raw(written).status == "complete"


@pytest.mark.slow
def test_resume_of_a_file_another_process_is_writing_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "busy.json"
    out.write_text(make_results(status="interrupted").model_dump_json(indent=1) + "\n")
    before = out.read_bytes()
    with holder(out) as (proc, _):
        refused = run_phase(["measure", "speculative", *SMALL, "--resume", str(out)])
        assert_one_line_error(refused, 2, str(out), f"pid {proc.pid}")
    assert "loading" not in refused.stderr
    assert out.read_bytes() == before

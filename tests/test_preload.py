"""Checks before loading: a prompt that does not fit and a bad --meter spec are refused before
the weights load (no `loading` line: both commands print one just before they load), and a
campaign that runs out of disk keeps its finished runs and says how to continue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox import assert_one_line_error, run_phase

from phase.base.errors import UsageProblem
from phase.decode.vocab_file import VocabFile, check_fit
from phase.results import dump_json, load_raw

pytestmark = pytest.mark.model

# --no-profile: the cost profile (most of a small campaign's time) is not what these tests are
# about; test_campaign.py and test_profile_campaign.py run campaigns with it.
SMALL = ["--quick", "--no-sensor", "--no-profile", "--prompts", "code", "--strategies",
         "plain,draft-2", "--tokens", "8", "--repeats", "2", "--cooldown", "0",
         "--idle-window", "0"]


def test_generate_that_does_not_fit_is_refused_before_loading(test_model_path: Path) -> None:
    # The case: llama.cpp rounds the context up to 256 but not the batch, so a
    # 16-token context aborted inside llama.cpp on the prefill. Now: a clean exit 2.
    proc = run_phase(["generate", "--model", "smollm2-135m", "--prompt", "hello there",
                      "--tokens", "16", "--ctx", "16"])
    assert_one_line_error(proc, 2, "context 16")
    assert "loading" not in proc.stderr


def test_the_fit_uses_what_llama_cpp_allocates(test_model_path: Path) -> None:
    """Just inside: prompt + tokens == n_ctx generates (with an n_ctx that llama.cpp rounds up
    to 256 but whose batch it does not); one token more is refused."""
    with VocabFile(test_model_path) as vocab:
        prompt = len(vocab.tokenize("hello there", add_special=True, parse_special=True))
    ctx = 40
    fits = run_phase(["generate", "--model", "smollm2-135m", "--raw", "--prompt", "hello there",
                      "--tokens", str(ctx - prompt), "--ctx", str(ctx), "--json"])
    assert fits.returncode == 0, fits.stderr
    assert "loading" in fits.stderr  # what the refusals above must not have reached
    assert len(json.loads(fits.stdout)["token_ids"]) == ctx - prompt
    with pytest.raises(UsageProblem, match=f"context {ctx}"):
        check_fit(prompt, ctx - prompt + 1, ctx)


def test_measure_refuses_a_prompt_that_does_not_fit_before_loading(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    proc = run_phase(["measure", "speculative", *SMALL, "--n-ctx", "64", "-o", str(out)])
    assert_one_line_error(proc, 2, "prompt 'code'", "context 64")
    assert "loading" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_bad_meter_spec_is_refused_before_loading(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    sensors = [a for a in SMALL if a != "--no-sensor"]
    proc = run_phase(["measure", "speculative", *sensors, "--meter", "wall.csv:kitchen:abc",
                      "-o", str(out)])
    assert_one_line_error(proc, 2, "--meter")
    assert "loading" not in proc.stderr and list(tmp_path.iterdir()) == []


def test_a_full_disk_keeps_the_finished_runs_and_says_how_to_continue(tmp_path: Path) -> None:
    # What each version of the file weighs, from a complete campaign of the same shape.
    sizing = tmp_path / "sizing.json"
    assert run_phase(["measure", "speculative", *SMALL, "-o", str(sizing)]).returncode == 0
    full = load_raw(sizing)
    size = {n: len(dump_json(full.model_copy(update={"runs": full.runs[:n],
                                                     "status": "running"})).encode())
            for n in (2, 3)}
    limit = (size[2] + size[3]) // 2  # room for two runs, not for three

    out = tmp_path / "full.json"
    proc = run_phase(["measure", "speculative", *SMALL, "-o", str(out)], fsize=limit,
                     env={"PYTHONDONTWRITEBYTECODE": "1"})
    line = assert_one_line_error(proc, 1, str(out), "File too large",
                                 "2 finished run(s) are kept", "--resume")
    assert "phase measure speculative" in line
    kept = load_raw(out)
    assert kept.status == "running" and len(kept.runs) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    resumed = run_phase(["measure", "speculative", *SMALL, "--resume", str(out)])
    assert resumed.returncode == 0, resumed.stderr
    final = load_raw(out)
    assert final.status == "complete" and len(final.runs) == 4
    assert [r.id for r in final.runs[:2]] == [r.id for r in kept.runs]


def test_an_unknown_energy_sensor_is_refused_before_loading(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    sensing = [a for a in SMALL if a != "--no-sensor"]
    proc = run_phase(["measure", "speculative", *sensing, "--energy-sensor", "rapl:nosuch",
                      "-o", str(out)])
    assert_one_line_error(proc, 2, "--energy-sensor", "rapl:nosuch")
    assert "loading" not in proc.stderr
    assert list(tmp_path.iterdir()) == []

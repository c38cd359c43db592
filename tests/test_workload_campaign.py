"""A user's own workload drives the speculative study: `phase measure speculative --quick
--workload FILE.jsonl` on the real test model runs the file's prompts in place of the
experiment's and records the workload (name, source, path, sha256, count) in its results file
and on its data page."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.cli import main
from phase.publish.data.datasets import load_dataset
from phase.publish.pages.raw import build_raw_page
from phase.results import load_raw
from phase.validate import RuleSettings, validate_results

pytestmark = pytest.mark.model


ARGS = ["measure", "speculative", "--quick", "--no-sensor", "--strategies", "plain,ngram",
        "--tokens", "6", "--repeats", "1", "--no-profile", "--no-disturbance", "--threads", "1",
        "--cooldown", "0", "--idle-window", "0"]


def test_speculative_study_on_own_workload(test_model_path: Path, tmp_path: Path) -> None:
    workload = tmp_path / "mine.jsonl"
    workload.write_text('{"prompt": "Name a fruit.", "id": "fruit", "category": "short"}\n'
                        '{"prompt": "Say hi.", "id": "hi"}\n'
                        '{"prompt": "Count to three."}\n')
    out = tmp_path / "out.json"
    # Two of its three prompts (--prompts selects by id), the shortest campaign that runs.
    result = CliRunner().invoke(main, [*ARGS, "--workload", str(workload),
                                       "--prompts", "hi,fruit", "-o", str(out)])
    assert result.exit_code == 0, result.output
    results = load_raw(out)
    recorded = results.config.workload
    assert recorded is not None
    assert (recorded.name, recorded.count, recorded.path) == ("mine", 3, str(workload))
    assert recorded.sha256 == hashlib.sha256(workload.read_bytes()).hexdigest()
    assert recorded.source == f"path:{workload}"
    prompts = {p.name: p for p in results.config.prompts}
    assert list(prompts) == ["hi", "fruit"]
    assert prompts["fruit"].text == "Name a fruit."
    assert prompts["fruit"].source == f"path:{workload}#fruit"
    assert sorted((r.prompt, r.strategy) for r in results.runs) == [
        ("fruit", "ngram"), ("fruit", "plain"), ("hi", "ngram"), ("hi", "plain")]
    assert all(r.tokens == 6 and r.matches_plain for r in results.runs)
    assert not validate_results(results, out.name).blocking
    # Its data page says which workload, pinned by what.
    _, dataset = load_dataset(out, RuleSettings())
    assert dataset is not None
    identity = dict(build_raw_page(dataset, {}, []).identity)
    assert identity["workload"] == (f"mine: 3 prompts from path:{workload}, sha256 "
                                    f"{recorded.sha256}")

    # A resumed campaign must run the same prompts: a workload file edited since is refused
    # (the recorded sha256 differs), the file left as it was.
    data = json.loads(out.read_text())
    data["status"], data["runs"] = "running", data["runs"][:1]
    out.write_text(json.dumps(data))
    before = out.read_bytes()
    workload.write_text(workload.read_text().replace("Say hi.", "Say hello."))
    resumed = CliRunner().invoke(main, [*ARGS, "--workload", str(workload),
                                        "--prompts", "hi,fruit", "--resume", str(out)])
    assert resumed.exit_code == 2, resumed.output
    assert "cannot resume, the campaign differs" in resumed.stderr
    assert "config.workload" in resumed.stderr
    assert out.read_bytes() == before

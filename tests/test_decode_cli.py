"""`phase generate` end to end with the real test model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.cli import main

pytestmark = pytest.mark.model


def generate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["generate", "--threads", "1", "--ctx", "256", *args])
    return result.exit_code, result.stdout, result.stderr


def test_generate_json_plain(test_model_path: Path) -> None:
    code, out, _ = generate("--model", str(test_model_path), "--tokens", "12",
                            "--prompt", "Name a fruit.", "--json")
    assert code == 0
    record = json.loads(out)
    assert len(record["token_ids"]) == 12
    assert record["strategy"] == "plain" and record["acceptance"] is None
    assert record["drafted"] == 0 and record["accepted"] == 0
    assert record["tokens_per_s"] > 0 and record["text"]
    assert record["chat_template"] is True


def test_generate_draft_matches_plain_and_prints_numbers(test_model_path: Path) -> None:
    code, out, err = generate("--model", str(test_model_path), "--draft", str(test_model_path),
                              "--strategy", "draft-3", "--tokens", "16",
                              "--prompt", "Name a fruit.", "--compare-plain")
    assert code == 0
    assert out.strip()  # the generated text on stdout
    assert "draft-3: 16 tokens" in err
    assert "acceptance 100.0%" in err
    assert "matches plain" in err


def test_generate_ngram_from_file_raw(test_model_path: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("one two three four one two three four one two", encoding="utf-8")
    code, out, _ = generate("--model", str(test_model_path), "--strategy", "ngram-4",
                            "--tokens", "8", "--prompt-file", str(prompt), "--raw", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["chat_template"] is False and record["k"] == 4
    assert record["prompt_tokens"] <= 12  # no template around the text
    assert record["drafted"] >= 1 and 0 <= record["accepted"] <= record["drafted"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--strategy", "beam-2", "--prompt", "x"], "unknown strategy"),
        (["--strategy", "draft-0", "--prompt", "x"], "k must be >= 1"),
        (["--strategy", "draft-2", "--prompt", "x"], "needs a draft model"),
        (["--prompt", "x", "--tokens", "300"], "> context 256"),
    ],
)
def test_generate_refuses_with_usage_exit(test_model_path: Path, args: list[str],
                                          needle: str) -> None:
    code, _, err = generate("--model", str(test_model_path), *args)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err


def test_generate_needs_exactly_one_prompt(test_model_path: Path) -> None:
    code, _, err = generate("--model", str(test_model_path))
    assert code == 2 and "--prompt" in err


def test_incompatible_draft_is_one_error_line(test_model_path: Path,
                                              other_bos_model_path: Path) -> None:
    code, out, err = generate("--model", str(test_model_path), "--draft",
                              str(other_bos_model_path), "--strategy", "draft-2", "--prompt", "x")
    assert code == 1 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "cannot be paired" in lines[0]


def test_generate_auto_profiles_first_and_records_its_decisions(test_model_path: Path) -> None:
    code, out, err = generate("--model", str(test_model_path), "--draft", str(test_model_path),
                              "--strategy", "auto", "--tokens", "12", "--prompt",
                              "Repeat exactly: one two three four five six seven eight.",
                              "--compare-plain", "--json")
    assert code == 0, err
    assert "auto: timing target and draft passes first" in err
    record = json.loads(out)
    assert record["strategy"] == "auto" and record["matches_plain"] is True
    assert all(s["proposer"] in ("none", "ngram", "draft") for s in record["trace"])
    assert all(s["expected_gain"] is not None for s in record["trace"])


def test_generate_sampled_repeats_with_its_seed_and_differs_across_seeds(
        test_model_path: Path) -> None:
    # draft-4: a proposer's rejection sampling (plain's chain: tests/test_sampled_runs.py).
    model, strategy = str(test_model_path), "draft-4"

    def tokens(seed: int) -> list[int]:
        code, out, err = generate("--model", model, "--draft", model, "--strategy", strategy,
                                  "--temperature", "0.7", "--seed", str(seed), "--tokens", "12",
                                  "--prompt", "Name a fruit.", "--json")
        assert code == 0, err
        record = json.loads(out)
        assert record["sampling"] == {"temperature": 0.7, "top_k": 0, "top_p": 1.0,
                                      "min_p": 0.0, "seed": seed}
        assert len(record["token_ids"]) == 12
        return list(record["token_ids"])

    first = tokens(7)
    assert tokens(7) == first
    # Three seeds drawing the same 12 tokens at temperature 0.7 would mean the seed is unused.
    assert len({tuple(first), tuple(tokens(8)), tuple(tokens(9))}) > 1


def test_generate_greedy_records_no_sampling(test_model_path: Path) -> None:
    code, out, _ = generate("--model", str(test_model_path), "--tokens", "2",
                            "--prompt", "Name a fruit.", "--json")
    assert code == 0 and json.loads(out)["sampling"] is None


@pytest.mark.parametrize(("args", "needle"), [
    (["--temperature", "-0.5"], "--temperature: -0.5 is out of range; give 0 (greedy) or"),
    (["--temperature", "0.7", "--top-p", "1.5"], "top_p must be in (0, 1], 1 for off (got 1.5)"),
    (["--temperature", "0.7", "--min-p", "1"], "min_p must be in [0, 1), 0 for off"),
    (["--temperature", "0.7", "--top-k", "-1"], "top_k must be an integer >= 0, 0 for off"),
    (["--temperature", "0.7", "--seed", "-1"], "seed must be an integer in 0..4294967294"),
    (["--seed", "7"], "--seed: only a sampled generation uses it; give --temperature above 0"),
    (["--temperature", "0.7", "--compare-plain"], "leave out one of --compare-plain"),
])
def test_generate_refuses_bad_sampler_settings(test_model_path: Path, args: list[str],
                                               needle: str) -> None:
    code, out, err = generate("--model", str(test_model_path), "--prompt", "x", *args)
    assert code == 2 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines

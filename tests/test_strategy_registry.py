"""The strategy registry: a strategy is one Family module plus one registration.

A toy family, registered here only (`registered` takes it out again), is measured by a real
campaign with the test model, validated, and rendered under its own label, with no change
anywhere else; and outside the registry and the display layer no code compares strategy or
proposer names (a grep, so that it stays so).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cost_factories import make_profile
from short_prompts import measure_command
from test_publish_inputs import site_paths

from phase.base.errors import UsageProblem
from phase.costmodel import cost_table
from phase.costmodel.predict import Proposing
from phase.policy.strategies import (
    Family,
    Options,
    Proposers,
    Strategy,
    families,
    parse_strategy,
    registered,
    run_terms,
)
from phase.publish.site.build import build_docs
from phase.results import Step, load_raw
from phase.validate import validate_file

REPO = Path(__file__).resolve().parent.parent
FILE = "speculative-fixture-toy.json"
NOTE = """---
title: Fixture note about a toy strategy
date: 2026-03-01
finding: A registered strategy is published under its label.
reproduce: make measure
versions:
  - version: 1
    date: 2026-03-01
    results: [{file}]
    changes: First version.
errata: []
---

{{{{ results_table() }}}}
"""


class RepeatLast:
    """Proposes the last token again, as many times as it may."""

    def begin(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return [seq[-1]] * max_tokens


class RepeatLastFamily(Family):
    """`repeat-last-K`: the whole toy strategy; greedy only."""

    name = "repeat-last"
    grammar = "repeat-last-K (e.g. repeat-last-2)"
    short_grammar = "repeat-last-K"
    order = 9
    title = "repeat the last token"
    samples = False

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        return RepeatLast()


def test_registration_is_removable_and_parses_the_family_grammar() -> None:
    with registered(RepeatLastFamily()):
        toy = parse_strategy("repeat-last-3")
        assert (toy.name, toy.k, toy.label) == ("repeat-last", 3, "repeat-last-3")
        assert [f.name for f in families()][-1] == "repeat-last"
        with pytest.raises(UsageProblem, match="say how many tokens"):
            parse_strategy("repeat-last")
    with pytest.raises(UsageProblem, match="unknown strategy 'repeat-last-3'"):
        parse_strategy("repeat-last-3")
    assert "repeat-last" not in [f.name for f in families()]
    assert parse_strategy("ngram", **vars(Options(ngram_k=5, ngram_adaptive=False))).label \
        == "ngram-5"


class LookupToy(RepeatLastFamily):
    """The toy again, declaring that each of its steps costs a lookup."""

    proposing = Proposing.LOOKUP


def test_the_cost_model_charges_the_terms_the_family_declares() -> None:
    table = cost_table(make_profile(lambda b: 10.0 * b), 100)
    steps = [Step(proposed=2, accepted=1, propose_ms=0.0, verify_ms=0.0)] * 3
    with registered(RepeatLastFamily()):
        free = run_terms(steps, "repeat-last-2", table)
    with registered(LookupToy()):
        looked = run_terms(steps, "repeat-last-2", table)
    assert free.target == looked.target == pytest.approx(3 * 30.0)
    assert free.propose == 0.0
    assert looked.propose == pytest.approx(3 * table.lookup) and table.lookup > 0


@pytest.mark.model
def test_a_registered_toy_strategy_is_measured_validated_and_labelled(tmp_path: Path) -> None:
    results_dir, notes = tmp_path / "results", tmp_path / "notes"
    results_dir.mkdir()
    notes.mkdir()
    out = results_dir / FILE
    with registered(RepeatLastFamily()):
        result = CliRunner().invoke(measure_command(), [
            "--quick", "--no-sensor", "--prompts", "code", "--strategies",
            "plain,repeat-last-2", "--tokens", "8", "--repeats", "1", "--cooldown", "0",
            "--idle-window", "0", "--no-disturbance", "--no-profile", "-o", str(out)])
        assert result.exit_code == 0, result.output
        results = load_raw(out)
        toy = [r for r in results.runs if r.strategy == "repeat-last-2"]
        assert len(toy) == 1 and toy[0].drafted > 0
        # Greedy verification keeps the output plain decoding's, whatever is proposed.
        plain = next(r for r in results.runs if r.strategy == "plain")
        assert toy[0].token_ids == plain.token_ids
        report = validate_file(out)
        assert not [f for f in report.findings if f.severity == "blocking"], report.findings
        (notes / "2026-03-fixture-toy.md").write_text(NOTE.format(file=FILE))
        paths = site_paths(tmp_path, type("I", (), {"results_dir": results_dir,
                                                    "notes_dir": notes})())
        build_docs(paths)
    page = (paths.docs_dir / "notes/fixture-toy/index.md").read_text(encoding="utf-8")
    assert re.search(r"\brepeat-last-2\b", page)


# A strategy or proposer name compared: `== "draft"`, `!= "plain"`, `.startswith("ngram")`,
# `in ("draft", "auto")`; the operand before `==`/`!=` is kept to tell a model's role or a
# setting's value ("draft" model, mode "auto") from a strategy.
_COMPARED = re.compile(r'(?:([\w.\]\[]+)\s*(?:==|!=)|startswith\(|\bin \()\s*\(?'
                       r'"(?:plain|draft|ngram|auto)(?:-[^"]*)?"')
_NOT_STRATEGIES = ("role", "mode")  # m.role == "draft", cpu_buffers' mode != "auto"
# Where names are the point: the registry itself, and the display layer (captions, labels).
_ALLOWED = ("phase/policy/strategies/", "phase/publish/")


def name_comparisons(path: str, text: str) -> list[str]:
    """`path:line` for each strategy or proposer name `text` compares."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for m in _COMPARED.finditer(line):
            operand = (m.group(1) or "").split(".")[-1]
            if operand not in _NOT_STRATEGIES:
                out.append(f"{path}:{number}: {line.strip()}")
    return out


def test_the_scan_finds_name_comparisons_and_leaves_roles() -> None:
    sample = ('if strategy.name == "plain":\n'
              'ok = run.strategy.startswith("draft")\n'
              'if who in ("ngram", "draft"):\n'
              'if s.strategy != "draft-4":\n'
              'if m.role == "draft" or mode != "auto":\n'
              'if figure == "plain_ms_per_token":\n')
    assert [f.split(":")[1] for f in name_comparisons("x.py", sample)] == ["1", "2", "3", "4"]


def test_no_code_outside_the_registry_compares_strategy_names() -> None:
    found = [hit for path in sorted((REPO / "phase").rglob("*.py"))
             if not (rel := path.relative_to(REPO).as_posix()).startswith(_ALLOWED)
             for hit in name_comparisons(rel, path.read_text(encoding="utf-8"))]
    assert found == [], "ask the strategy's Family instead:\n" + "\n".join(found)

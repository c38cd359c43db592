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
    BASELINE,
    Family,
    Options,
    Proposers,
    Strategy,
    decides,
    families,
    is_baseline,
    needs_draft,
    parse_strategy,
    proposes_nothing,
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


def test_labels_are_classified_by_their_family_not_their_spelling() -> None:
    assert BASELINE == "plain" and parse_strategy(BASELINE).label == BASELINE
    assert [is_baseline(s) for s in ("plain", "draft-4", "ngram", "auto", " plain", "plainx",
                                     "plain on plain's text")] == [
        True, False, False, False, True, False, False]
    assert [needs_draft(s) for s in ("draft-4", "draft", "auto", "plain", "drafty-4")] == [
        True, True, False, False, False]
    assert [decides(s) for s in ("auto", "ngram", "draft-4", "plain")] == [
        True, False, False, False]
    assert [proposes_nothing(p) for p in ("none", None, "draft", "ngram")] == [
        True, False, False, False]
    with registered(RepeatLastFamily()):
        assert not is_baseline("repeat-last-2") and not needs_draft("repeat-last-2")


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
# `in ("draft", "auto")`, a recorded proposer `== "none"`; the operand before `==`/`!=` is
# kept to tell a model's role or a setting's value ("draft" model, mode "auto", flash_attn
# "auto") from a strategy, and to count "none" only as a proposer.
_COMPARED = re.compile(r'(?:([\w.\]\[]+)\s*(?:==|!=)|startswith\(|\bin \()\s*\(?'
                       r'"(plain|draft|ngram|auto|none)(?:-[^"]*)?"')
_NOT_STRATEGIES = ("role", "mode", "flash_attn")  # m.role == "draft", mode != "auto"
# The same through a constant holding a name (PLAIN = BASELINE, or a module's own
# `DRAFT = "draft"`): `== PLAIN`, `!= PLAIN`, `PLAIN in labels`, `in (PLAIN, ...)`,
# `startswith(PLAIN)`, or a collection holding it on either side of `==`/`!=`. Building a
# label or key with one (`(prompt, PLAIN, levels)`, `strategies=(PLAIN, s)`) is no comparison.
_KNOWN_CONSTANTS = ("PLAIN", "BASELINE")
_DEFINES = re.compile(r'^([A-Z][A-Z0-9_]*)\s*(?::[^=]+)?=\s*(?:"(?:plain|draft|ngram|auto)'
                      r'(?:-[^"]*)?"|BASELINE|PLAIN|\w+\.name)\s*(?:#.*)?$', re.MULTILINE)
_CONSTANT_FORMS = (
    r'(?:==|!=)\s*(?:[\w.]+\()?[(\[{]?[^()\[\]{}=]*\b{c}\b',  # == PLAIN, != sorted({PLAIN
    r'\b{c}\b[^()\[\]{}=]*[)\]}]*\s*(?:==|!=)',  # PLAIN == s, (PLAIN, s) != x
    r'\b{c}\s+(?:not\s+)?in\b',  # PLAIN in labels
    r'\bin\s*[(\[{][^)\]}]*\b{c}\b',  # s in (PLAIN, x)
    r'startswith\(\(?[^)]*\b{c}\b',  # s.startswith(PLAIN)
)
# Where names are the point: the registry itself, and the display layer (captions, labels).
_ALLOWED = ("phase/policy/strategies/", "phase/publish/")
_SCANNED = ("phase", "bench")


def name_constants(texts: Sequence[str]) -> tuple[str, ...]:
    """The constants that hold a strategy name: the known ones and any `texts` define."""
    found = {m.group(1) for text in texts for m in _DEFINES.finditer(text)}
    return tuple(sorted(found | set(_KNOWN_CONSTANTS)))


def name_comparisons(path: str, text: str,
                     constants: Sequence[str] = _KNOWN_CONSTANTS) -> list[str]:
    """`path:line` for each strategy or proposer name `text` compares, spelt out or through
    one of `constants`."""
    through = [re.compile(form.replace("{c}", re.escape(c))) for c in constants
               for form in _CONSTANT_FORMS]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        spelt = False
        for m in _COMPARED.finditer(code):
            operand = (m.group(1) or "").split(".")[-1]
            if operand in _NOT_STRATEGIES or (m.group(2) == "none"
                                              and not operand.endswith("proposer")):
                continue
            spelt = True
        if spelt or any(r.search(code) for r in through):
            out.append(f"{path}:{number}: {line.strip()}")
    return out


def test_the_scan_finds_name_comparisons_and_leaves_roles() -> None:
    sample = ('if strategy.name == "plain":\n'
              'ok = run.strategy.startswith("draft")\n'
              'if who in ("ngram", "draft"):\n'
              'if s.strategy != "draft-4":\n'
              'if m.role == "draft" or mode != "auto":\n'
              'if figure == "plain_ms_per_token":\n'
              'if step.proposer == "none":\n'
              'if flash_attn == "auto" or kind == "none":\n')
    assert [f.split(":")[1] for f in name_comparisons("x.py", sample)] == ["1", "2", "3", "4",
                                                                           "7"]


def test_the_scan_finds_comparisons_through_name_constants() -> None:
    sample = ('if row.strategy == PLAIN:\n'
              'keep = [r for r in rows if r.strategy != BASELINE]\n'
              'if PLAIN not in config.strategies:\n'
              'if s in (PLAIN, "x"):\n'
              'ok = label.startswith(PLAIN)\n'
              'if sorted(a) != sorted({PLAIN, b}):\n'
              'if condition_key(r) == (p, PLAIN, levels):\n'
              'if DRAFT == s.strategy:\n'
              'key = (p, PLAIN, levels)\n'
              'config = replace(base, strategies=(PLAIN, chosen.strategy))\n'
              'plain = by.get((prompt, PLAIN, combo.levels), [])\n'
              'if m.role == DRAFT_ROLE or PLAINS == 2:\n'
              '# plain rows: r.strategy == PLAIN\n'
              'x = f(s)  # not `s == PLAIN`\n')
    constants = name_constants(['DRAFT = "draft"\nDRAFT_ROLE = "model"\n'])
    assert constants == ("BASELINE", "DRAFT", "PLAIN")
    hits = name_comparisons("x.py", sample, constants)
    assert [f.split(":")[1] for f in hits] == ["1", "2", "3", "4", "5", "6", "7", "8"]
    assert hits[0] == "x.py:1: if row.strategy == PLAIN:"


def test_no_code_outside_the_registry_compares_strategy_names() -> None:
    scanned = {rel: path.read_text(encoding="utf-8")
               for top in _SCANNED for path in sorted((REPO / top).rglob("*.py"))
               if not (rel := path.relative_to(REPO).as_posix()).startswith(_ALLOWED)}
    constants = name_constants(list(scanned.values()))
    found = [hit for rel, text in scanned.items()
             for hit in name_comparisons(rel, text, constants)]
    assert found == [], "ask the strategy's Family instead:\n" + "\n".join(found)

"""Sampled campaigns: the speculative_sampling experiment's quick plan measured end to end on
the real test model (greedy at temperature 0, sampled above), validated, regenerated from a
run's recorded seed, and its note built; the equivalence rule's sampled checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from short_prompts import SHORT_PROMPTS

from phase.base.errors import UsageProblem
from phase.campaign import (
    Destination,
    Factor,
    SensorOptions,
    discover_sensors,
    load_experiment,
    prepare,
)
from phase.campaign.factors import check_factors
from phase.decode import Engine
from phase.decode.sampled_timed import run_sampled
from phase.policy.sampling import SamplingSettings
from phase.policy.speculative_sampling import RECORDED
from phase.policy.strategies import parse_strategy
from phase.publish.site.build import build_site
from phase.publish.site.paths import SitePaths
from phase.results import ResultsFile, load_raw
from phase.results.levels import filled, run_seed
from phase.validate import validate_results

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ResultsFile, list[int]]:
    experiment = load_experiment("speculative_sampling")
    quick = experiment.quick_plan()
    assert quick is not None
    # Two temperatures are enough to cover greedy and sampled; one repeat keeps it short.
    temps = Factor("temperature", "temperature", (0, 0.7))
    exp = replace(experiment, factors=(temps,), prompts_dir=SHORT_PROMPTS)  # short prompts
    # disturbed_load None: a shared test machine's background load must not leave every run
    # out of the note these tests build (tests/test_slowdown.py judges disturbance).
    plan = replace(quick, tokens=8, repeats=1, factors=(temps,), quiet_check_s=0.0,
                   disturbed_load=None)
    out = tmp_path_factory.mktemp("sampled") / "speculative_sampling-quick.json"
    with prepare(exp, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as c:
        prompt = list(c.prompt_tokens["code"])
        results = c.run()
    return out, results, prompt


def test_sampled_runs_record_their_seed_and_greedy_runs_are_unchanged(
        campaign: tuple[Path, ResultsFile, list[int]]) -> None:
    out, results, _ = campaign
    assert load_raw(out).model_dump() == results.model_dump()
    assert results.config.sampling is not None
    assert (results.config.sampling.top_k, results.config.sampling.top_p,
            results.config.sampling.min_p) == (40, 0.95, 0.05)
    assert len(results.runs) == 4 * 2
    for run in results.runs:
        # Every sampled run that proposes records the rule its proposals were verified by.
        expected = RECORDED["rejection"].verification if run.seed is not None and run.k else None
        assert run.verification == expected, run.id
        if run.factors["temperature"] == 0:
            assert run.seed is None and run.matches_plain is True
        else:
            assert run.seed == run_seed(results.config.seed, run.id)
            assert run.matches_plain is None and run.matches_plain_reason
            assert run.tokens == 8 and len(run.trace) == run.steps
            assert run.drafted == sum(s.proposed for s in run.trace)
            assert run.accepted == sum(s.accepted for s in run.trace)
            if run.strategy == "draft-4":  # the test model drafting for itself drafts
                assert run.drafted > 0 and run.acceptance is not None
    report = validate_results(results, out.name)
    assert not report.blocking, [f.message for f in report.findings if f.severity == "blocking"]
    assert report.notes == []  # the rule is recorded, so nothing is left unrecorded


def test_a_sampled_run_regenerates_from_its_recorded_seed(
        campaign: tuple[Path, ResultsFile, list[int]], test_model_path: Path) -> None:
    _, results, prompt = campaign
    sampling = results.config.sampling
    assert sampling is not None
    sampled = [r for r in results.runs if r.seed is not None and r.strategy in ("plain", "draft-4")]
    assert len(sampled) == 2
    with Engine(test_model_path, test_model_path, n_ctx=4096, n_threads=1) as engine:
        for run in sampled:
            settings = SamplingSettings(float(run.factors["temperature"]), sampling.top_k,
                                        sampling.top_p, sampling.min_p, run.seed or 0)
            again = run_sampled(engine, filled(prompt, 0), parse_strategy(run.strategy),
                                run.tokens, settings)
            assert again.token_ids == run.token_ids, run.id
            other = run_sampled(engine, prompt, parse_strategy(run.strategy), run.tokens,
                                settings.with_seed(settings.seed + 1))
            assert other.tokens == run.tokens  # another seed: a run of its own length


def test_equivalence_checks_a_sampled_runs_seed_and_claims(
        campaign: tuple[Path, ResultsFile, list[int]]) -> None:
    out, results, _ = campaign
    bad = results.model_copy(deep=True)
    sampled = next(r for r in bad.runs if r.seed is not None)
    greedy = next(r for r in bad.runs if r.seed is None and r.strategy == "plain")
    sampled.seed = (sampled.seed or 0) + 1
    greedy.seed = 5
    messages = [f.message for f in validate_results(bad, out.name).findings
                if f.rule == "equivalence" and f.severity == "blocking"]
    assert any("the file's seed rule gives" in m for m in messages), messages
    assert any("a greedy run records a sampling seed" in m for m in messages), messages


def test_the_note_builds_with_its_temperature_table_and_chart(
        campaign: tuple[Path, ResultsFile, list[int]], tmp_path: Path) -> None:
    out, _, _ = campaign
    site = tmp_path / "site"
    (site / "results").mkdir(parents=True)
    (site / "results" / out.name).write_bytes(out.read_bytes())
    (site / "notes").mkdir()
    built = build_site(SitePaths.default(
        REPO, results_dir=site / "results", notes_dir=site / "notes", docs_dir=site / "docs",
        site_dir=site / "html", published_dir=site / "published"), include_quick=True)
    [note] = [p for p in built.pages
              if p.startswith("notes/speculative-sampling-") and p.endswith("v1/index.md")]
    page = (site / "docs" / note).read_text()
    assert "Speculative decoding when sampling" in page
    assert "phase-temperature-table" in page and "phase-trend-table" in page
    assert "Against the greedy rows" in page
    assert "acceptance_vs_temperature" in page


def test_a_temperature_level_must_be_a_number_zero_or_more() -> None:
    with pytest.raises(UsageProblem, match="must be a temperature"):
        check_factors((Factor("temperature", "temperature", (-0.5,)),))
    with pytest.raises(UsageProblem, match="must be a temperature"):
        check_factors((Factor("temperature", "temperature", ("hot",)),))


def test_a_sampled_bare_ngram_keeps_the_adaptive_length_the_rules_recompute(
        test_model_path: Path) -> None:
    # A long repeated pattern: the matcher finds continuations of up to k tokens at once, so
    # a sampler that ignored the adaptive length would propose 16 at its first match.
    from phase.policy.ngram_length import START, lengths

    strategy = parse_strategy("ngram")
    assert strategy.adaptive and strategy.max_proposal > START
    with Engine(test_model_path, None, n_ctx=2048, n_threads=1) as engine:
        prompt = engine.target.tokenize("a b c d e f g h i j k l m n o p " * 12,
                                        add_special=False, parse_special=False)
        proposed = []
        for seed in range(3):
            run = run_sampled(engine, prompt, strategy, 48, SamplingSettings(0.7, 40, 0.95,
                                                                             0.05, seed))
            outcomes = [(s.proposed, s.accepted) for s in run.trace]
            allowed = list(lengths(strategy.max_proposal, outcomes))
            assert all(p <= a for (p, _), a in zip(outcomes, allowed, strict=True)), outcomes
            proposed += [p for p, _ in outcomes if p]
    assert proposed and proposed[0] <= START

"""Experiments over factors: declaration, schedule and ids, and a toy experiment declared here
(not in experiments/) measured end to end on the real test model."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from short_prompts import SHORT_PROMPTS

from phase.analysis import condition_key, summarize
from phase.analysis.queries import levels_text
from phase.base.errors import PhaseError, UsageProblem
from phase.campaign import (
    DEFAULT_PLAN,
    EXPERIMENTS_DIR,
    Destination,
    Experiment,
    Factor,
    QuietObserver,
    SensorOptions,
    discover_sensors,
    prepare,
)
from phase.campaign.factors import check_factors, check_threads
from phase.campaign.plan import campaign_config, planned_runs
from phase.campaign.shards import campaign_id
from phase.campaign.ui import design_line
from phase.decode import Engine
from phase.models.sources import TEST_MODEL
from phase.publish.data.datasets import load_dataset
from phase.publish.notes.render import environment
from phase.publish.numbers.downloads import results_frame
from phase.publish.numbers.tables import build_table
from phase.publish.site.build import build_site
from phase.publish.site.paths import SitePaths
from phase.results import PromptSpec, Run, load_raw
from phase.results.schedule import combinations, planned_schedule, schedule
from phase.validate import RuleSettings, validate_results
from phase.validate.report import Finding

REPO = Path(__file__).resolve().parent.parent

THREADS = Factor("threads", "threads", (1, 2))
MODE = Factor("mode", "custom", ("a", "b"))

# The toy experiment: prompt x strategy x threads x a custom factor, on the test model, with the
# speculative study's quick settings. Nothing outside this file declares it.
TOY = Experiment(
    name="toy",
    note=None,
    description="A toy experiment over extra factors, for tests.",
    prompts_dir=SHORT_PROMPTS,
    plan=replace(
        DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
        strategies=("plain", "draft-4"), tokens=8, repeats=2, cooldown_s=0.0,
        idle_window_s=0.0, profile=False, purpose="smoke", disturbed_load=None,
        quiet_check_s=0.5, target_half_width=None,
    ),
    factors=(THREADS, MODE),
)


# --- declaration --------------------------------------------------------------------------------


@pytest.mark.parametrize(("factors", "message"), [
    ((THREADS, replace(THREADS, kind="custom")), "declared twice"),
    ((Factor("n", "threads", ()),), "no levels"),
    ((Factor("n", "speed", (1,)),), "unknown kind 'speed'"),
    ((Factor("n", "threads", (0, 2)),), "level 0 must be a whole number of at least 1"),
    ((Factor("n", "custom", ("a", "a")),), "levels or labels repeat"),
    ((Factor("n", "custom", ("a b",)),), "label 'a b'"),
    ((Factor("n", "custom", ("a", "b"), labels=("x",)),), "1 label(s) for 2 level(s)"),
    ((Factor("strategy", "custom", ("a",)),), "name 'strategy'"),
    ((THREADS, Factor("t2", "threads", (4,))), "a second 'threads' factor"),
    ((Factor("m", "model", (3,)),), "must be a model spec"),
])
def test_bad_declarations_are_refused_with_what_to_fix(factors: tuple[Factor, ...],
                                                        message: str) -> None:
    with pytest.raises(UsageProblem, match=r"factors\[\d\]\.\w+(\[\d\])?: .*; allowed: ") as err:
        check_factors(factors)
    assert message in str(err.value)


def test_an_experiment_copies_its_factors_into_both_plans() -> None:
    quick = replace(TOY.plan, repeats=1)
    exp = replace(TOY, quick=quick)
    assert exp.plan.factors == exp.quick_plan().factors == (THREADS, MODE)  # type: ignore[union-attr]
    with pytest.raises(UsageProblem, match=r"factors\[0\]\.levels: no levels"):
        Experiment("bad", None, "", EXPERIMENTS_DIR, DEFAULT_PLAN,
                   factors=(Factor("x", "custom", ()),))


# --- schedule, ids, identity ------------------------------------------------------------------


def test_conditions_are_prompts_x_strategies_x_levels_and_ids_name_the_levels() -> None:
    specs = [THREADS.spec(), MODE.spec()]
    runs = schedule(["p", "q"], ["plain", "draft-4"], 2, seed=3, shuffle=True, factors=specs)
    assert len(runs) == 2 * 2 * 2 * 2 * 2 == planned_runs(replace(TOY.plan, prompts=("p", "q")))
    assert [r.order for r in runs] == list(range(32))
    for repeat in (0, 1):
        block = {r.condition for r in runs if r.repeat == repeat}
        assert len(block) == 16  # every condition once per repeat
    ids = {r.run_id for r in runs}
    assert "r0-p-draft-4-threads=1-mode=a" in ids and "r1-q-plain-threads=2-mode=b" in ids
    assert len(ids) == len(runs)
    # Repeats are shuffled apart, and a seed replays its order.
    assert [r.condition for r in runs[:16]] != [r.condition for r in runs[16:]]
    assert schedule(["p", "q"], ["plain", "draft-4"], 2, 3, True, specs) == runs


def test_without_factors_the_order_and_ids_are_those_of_every_earlier_file() -> None:
    """The speculative study: each committed campaign's planned runs keep their ids and
    orders (the schedule as it was before factors, re-derived from its config)."""
    checked = 0
    for path in sorted((REPO / "results").glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("kind") != "raw" or "config" not in data:
            continue
        results = load_raw(path)
        planned = {r.run_id: r.order for r in planned_schedule(results.config)}
        for run in results.runs:
            if run.rerun_of is None and run.repeat < results.config.repeats:
                assert planned[run.id] == run.order, (path.name, run.id)
                checked += 1
    assert checked > 0
    assert combinations([]) == [combinations([])[0]] and combinations([])[0].tag == ""


def test_factors_enter_the_config_and_campaign_id_only_when_declared() -> None:
    prompts = [PromptSpec(name="code", text="x")]
    plain = campaign_config(replace(TOY.plan, factors=()), prompts)
    assert "factors" not in json.loads(plain.model_dump_json())
    with_factors = json.loads(campaign_config(TOY.plan, prompts).model_dump_json())
    assert with_factors["factors"][0] == {"name": "threads", "kind": "threads",
                                          "levels": [1, 2], "labels": ["1", "2"]}
    base = replace(TOY.plan, factors=())
    assert campaign_id("toy", base, 1, None) != campaign_id("toy", TOY.plan, 1, None)
    # What the terminal says before the runs counts conditions over the levels too.
    assert design_line(campaign_config(TOY.plan, prompts)) == \
        "design: fixed, 2 repeat(s) of 8 condition(s), 16 runs"


def test_bad_plans_over_factors_are_refused_before_anything_is_written(
        tmp_path: Path, other_bos_model_path: Path) -> None:
    out = tmp_path / "x.json"
    sensors = SensorOptions(use=False)
    # A model level whose vocabulary differs from the target's: its tokens would not be the
    # prompt's tokens, so its conditions would not compare.
    other = Factor("fmt", "model", (TEST_MODEL, str(other_bos_model_path)), labels=("a", "b"))
    with pytest.raises(PhaseError, match=r"smollm2-other-bos\.gguf"):
        prepare(TOY, replace(TOY.plan, factors=(other,)), Destination(out),
                discover_sensors(sensors))
    with pytest.raises(UsageProblem, match="after 8000 tokens of context fill"):
        fill = Factor("fill", "context_fill", (0, 8000))
        prepare(TOY, replace(TOY.plan, factors=(fill,)), Destination(out),
                discover_sensors(sensors))
    assert not out.exists()


def test_threads_levels_above_the_usable_cpus_are_refused() -> None:
    check_threads((THREADS,), 2)
    with pytest.raises(UsageProblem, match=r"threads level\(s\) 3, 8 exceed the 2 CPU"):
        check_threads((Factor("threads", "threads", (1, 3, 8)),), 2)


def test_a_finding_read_back_from_json_keeps_its_condition() -> None:
    """The build cache stores findings as JSON: their levels come back as lists."""
    found = Finding("variance", "warning", "f.json", "unstable", prompt="p", strategy="plain",
                    levels=(("threads", 2),))
    back = Finding(**json.loads(json.dumps(asdict(found))))
    assert back == found and back.condition == ("p", "plain", (("threads", 2),))
    assert {back.condition: 1}[found.condition] == 1
    assert "levels" not in replace(found, levels=()).to_dict()


# --- the toy experiment, measured ---------------------------------------------------------------


class ThreadsSeen(QuietObserver):
    """Records, as each run finishes, the thread counts the target's llama.cpp context has."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.seen: dict[str, tuple[int, int]] = {}

    def run_finished(self, index: int, run: Run) -> None:
        assert self.engine is not None
        self.seen[run.id] = self.engine.target.context_threads()



@pytest.mark.cores  # a threads factor of 1 and 2: refused on a worker pinned to one CPU
@pytest.mark.model
def test_a_toy_experiment_over_factors_measures_validates_and_summarizes(
        tmp_path: Path) -> None:
    out = tmp_path / "toy.json"
    observer = ThreadsSeen()
    with prepare(TOY, TOY.plan, Destination(out), discover_sensors(SensorOptions(use=False)),
                 observer) as campaign:
        observer.engine = campaign.engine
        results = campaign.run()
    assert load_raw(out).model_dump() == results.model_dump()
    assert results.status == "complete" and len(results.runs) == 2 * 2 * 2 * 2
    assert [f.name for f in results.config.factors] == ["threads", "mode"]
    conditions = Counter(condition_key(r) for r in results.runs)
    assert len(conditions) == 8 and set(conditions.values()) == {2}
    for run in results.runs:
        # The level was applied: llama.cpp's context decoded on that many threads (as it
        # reports them after the run), and the id says so.
        assert observer.seen[run.id] == (run.factors["threads"],) * 2
        assert run.id.endswith(f"-threads={run.factors['threads']}-mode={run.factors['mode']}")
    report = validate_results(results, out.name)
    assert not report.blocking, [f.message for f in report.findings]
    summary = summarize(results, report, out.name)
    assert len(summary.rows) == 8
    assert {condition_key(r) for r in summary.rows} == set(conditions)
    for row in summary.rows:
        # Each ratio is to plain at the same levels: plain over itself is exactly 1.
        if row.strategy == "plain":
            assert row.speed_vs_plain == 1.0
        assert row.speed_vs_plain is not None and set(row.factors) == {"threads", "mode"}
    # Published: the results table has a column per extra factor, every row its own anchor,
    # and the table's download the same columns.
    _, ds = load_dataset(out, RuleSettings())
    assert ds is not None
    table = build_table(ds, "..")
    assert table.factors == ["threads", "mode"] and len({r.anchor for r in table.rows}) == 8
    html = environment(REPO / "templates").get_template("results_table.html.j2").render(
        tables=[table], anchored=True)
    assert "<th>strategy</th><th>threads</th><th>mode</th>" in html
    assert html.count('<td class="phase-label">2</td><td class="phase-label">b</td>') == 2
    assert list(results_frame(table).columns[:4]) == ["prompt", "strategy", "threads", "mode"]
    # The whole site, as `phase site --include-quick` builds it from a results directory holding
    # only this file: the experiment's generated note (templates/experiments/default.md.j2)
    # states the best strategy per prompt at each combination of levels, against plain there.
    site = tmp_path / "site"
    (site / "results").mkdir(parents=True)
    (site / "results" / out.name).write_bytes(out.read_bytes())
    (site / "notes").mkdir()
    built = build_site(SitePaths.default(
        REPO, results_dir=site / "results", notes_dir=site / "notes", docs_dir=site / "docs",
        site_dir=site / "html", published_dir=site / "published"), include_quick=True)
    [note] = [p for p in built.pages if p.startswith("notes/toy-") and p.endswith("v1/index.md")]
    page = (site / "docs" / note).read_text()
    assert "<th>strategy</th><th>threads</th><th>mode</th>" in page
    best = [line for line in page.splitlines() if line.startswith("- code at ")]
    assert sorted(line.split(":")[0] for line in best) == [
        f"- code at threads={t}, mode={m}" for t in (1, 2) for m in "ab"]


@pytest.mark.model
def test_tokens_and_context_fill_levels_apply_with_a_plain_reference_each(
        tmp_path: Path) -> None:
    exp = replace(TOY, factors=(Factor("tokens", "tokens", (4, 8)),
                                Factor("fill", "context_fill", (0, 40))))
    plan = replace(exp.plan, strategies=("plain", "ngram"), repeats=1)
    out = tmp_path / "fill.json"
    with prepare(exp, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as campaign:
        base = len(campaign.prompt_tokens["code"])
        results = campaign.run()
    assert len(results.runs) == 2 * 2 * 2
    assert sorted((r.factors["tokens"], r.factors["fill"]) for r in results.references) == [
        (4, 0), (4, 40), (8, 0), (8, 40)]
    for run in results.runs:
        assert run.tokens == run.factors["tokens"]
        assert run.prompt_tokens == base + run.factors["fill"]
        if run.strategy == "plain":
            assert run.matches_plain  # compared with the reference at its own levels
    # Each reference decoded its own context and length (the test model happens to continue a
    # prompt the same way after 40 tokens of its own repeat, so the texts need not differ).
    for ref in results.references:
        assert len(ref.token_ids) == ref.factors["tokens"]
        assert ref.prompt_token_ids is not None
        assert len(ref.prompt_token_ids) == base + ref.factors["fill"]
        assert ref.prompt_token_ids[ref.factors["fill"]:] == campaign.prompt_tokens["code"]
    report = validate_results(results, out.name)
    assert not report.blocking, [f.message for f in report.findings if f.severity == "blocking"]
    assert len(summarize(results, report, out.name).rows) == 8


@pytest.mark.model
def test_model_levels_each_decode_on_their_own_engine(tmp_path: Path,
                                                       test_model_path: Path) -> None:
    """Two levels naming the same file two ways (an embedded name and a path): two engines,
    two references, and the header records each level's model."""
    fmt = Factor("fmt", "model", (TEST_MODEL, str(test_model_path)), labels=("name", "path"))
    exp = replace(TOY, factors=(fmt,))
    plan = replace(exp.plan, strategies=("plain",), repeats=1, draft=None)
    out = tmp_path / "models.json"
    with prepare(exp, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as campaign:
        engines = campaign.level_engines
        assert set(engines) == {TEST_MODEL, str(test_model_path)}
        assert len({id(e) for e in [campaign.engine, *engines.values()]}) == 3
        results = campaign.run()
    assert [m.level for m in results.models] == [None, "name", "path"]
    assert sorted(r.factors["fmt"] for r in results.references) == sorted(engines)
    assert sorted(r.id for r in results.runs) == ["r0-code-plain-fmt=name",
                                                  "r0-code-plain-fmt=path"]
    assert all(r.matches_plain for r in results.runs)
    assert not validate_results(results, out.name).blocking


@pytest.mark.cores  # a threads factor of 1 and 2: refused on a worker pinned to one CPU
@pytest.mark.model
def test_adaptive_rounds_run_conditions_over_factors_with_plain_at_their_levels(
        tmp_path: Path) -> None:
    # A target no two-repeat interval of the test model meets, and a budget of one round:
    # four draft-4 conditions and plain at each of their four level pairs. (At ±0.1%, a
    # condition whose two paired ratios happened to agree within 0.2% was once narrow.)
    plan = replace(TOY.plan, target_half_width=1e-6, extra_runs=8, repeats=2)
    out = tmp_path / "adaptive.json"
    with prepare(TOY, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as campaign:
        results = campaign.run()
    record = results.adaptive
    assert record is not None and len(record.conditions) == 4  # draft-4 at 4 level pairs
    assert {tuple(sorted(c.factors)) for c in record.conditions} == {("mode", "threads")}
    extra = [r for r in results.runs if r.repeat >= 2]
    assert len(record.rounds) == 1 and len(extra) == record.runs_spent == 8
    assert all(r.id.startswith("r2-code-") and "-threads=" in r.id for r in extra)
    for round_ in record.rounds:
        ran = {condition_key(r) for r in extra if r.repeat == round_.repeat}
        for prompt, strategy, levels in (tuple(c) for c in round_.conditions):
            # each wide condition ran, with plain for its prompt at the same levels
            assert {(prompt, strategy), (prompt, "plain")} <= {(p, s) for p, s, lv in ran
                                                               if levels_text(lv) == levels}
    assert not validate_results(results, out.name).blocking

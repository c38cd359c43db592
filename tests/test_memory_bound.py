"""The memory-bound study: model variants as factor levels, the bandwidth record, the memory
figures and the note, on the real test model (experiments/memory_bound.py's quick plan)."""

from __future__ import annotations

import html
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from phase.analysis import summarize
from phase.analysis.figures import FIGURES, MEDIAN_OF_RUNS, memory_reason, memory_value
from phase.analysis.memory import memory_views
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
from phase.decode.variants import parse_spec
from phase.models.sources import TEST_MODEL, ModelError
from phase.publish.site.build import build_site
from phase.publish.site.paths import SitePaths
from phase.results import SCHEMA_VERSION, ResultsFile, load_raw
from phase.validate import validate_results

REPO = Path(__file__).resolve().parent.parent


# --- variant specs ------------------------------------------------------------------------------


def test_a_variant_spec_names_its_source_and_format() -> None:
    assert parse_spec("variant:qwen2.5-coder-0.5b:q8_0") == ("qwen2.5-coder-0.5b", "Q8_0")
    # The source may hold ':' itself (hf:OWNER/REPO/FILE); the format is after the last one.
    assert parse_spec("variant:hf:o/r/f.gguf:Q4_0") == ("hf:o/r/f.gguf", "Q4_0")
    assert parse_spec("smollm2-135m") is None


@pytest.mark.parametrize(("spec", "message"), [
    ("variant:smollm2-135m", "write variant:SOURCE:FORMAT"),
    ("variant::Q8_0", "write variant:SOURCE:FORMAT"),
    ("variant:smollm2-135m:Q9_9", "unknown format 'Q9_9': use one of F32, F16"),
    ("variant:variant:smollm2-135m:Q8_0:F16", "not another variant"),
])
def test_bad_variant_specs_are_refused_with_what_to_write(spec: str, message: str) -> None:
    with pytest.raises(ModelError, match="model spec") as err:
        parse_spec(spec)
    assert message in str(err.value) and err.value.exit_code == 2
    # ... and in a declaration, before anything is resolved.
    refused = r"factors\[\d\]\.\w+(\[\d\])?: .*; allowed: "
    with pytest.raises(UsageProblem, match=refused) as declared:
        check_factors((Factor("fmt", "model", (spec,), labels=("x",)),))
    assert message in str(declared.value)


def test_a_variant_level_without_labels_is_told_to_give_them() -> None:
    with pytest.raises(UsageProblem, match="give `labels`"):
        check_factors((Factor("fmt", "model", (f"variant:{TEST_MODEL}:Q8_0",)),))


# --- the quick campaign, measured and published ---------------------------------------------------


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ResultsFile]:
    exp = load_experiment("memory_bound")
    assert exp.quick is not None
    out = tmp_path_factory.mktemp("memory") / "memory_bound-quick.json"
    # The quick plan judges disturbance; on a shared test machine its background load would
    # leave every run out, and these tests are about the figures (tests/test_slowdown.py
    # judges disturbance).
    plan = replace(exp.quick, disturbed_load=None)
    with prepare(exp, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as campaign:
        results = campaign.run()
    return out, results


@pytest.mark.model
def test_the_quick_campaign_records_variants_estimates_and_bandwidth(
        quick: tuple[Path, ResultsFile]) -> None:
    out, results = quick
    assert load_raw(out).model_dump() == results.model_dump()
    assert results.status == "complete" and results.schema_version == SCHEMA_VERSION
    # 2 formats x 1 thread count x 2 fills, 2 repeats each.
    assert len(results.runs) == 2 * 2 * 2
    levels = {m.level: m for m in results.models if m.level}
    assert set(levels) == {"Q8_0", "Q4_1"}
    q8 = levels["Q8_0"]
    assert q8.variant is not None and levels["Q4_1"].variant is None
    assert q8.variant.spec == f"variant:{TEST_MODEL}:Q8_0"
    assert q8.variant.recipe["ftype"] == "Q8_0"
    assert q8.variant.recipe["source_sha256"] == levels["Q4_1"].sha256
    assert q8.variant.recipe["output_sha256"] == q8.sha256 != levels["Q4_1"].sha256
    assert max(q8.variant.stored_types, key=q8.variant.stored_types.__getitem__) == "Q8_0"
    for m in results.models:
        assert m.bytes_per_token is not None and m.bytes_per_token.weights_bytes > 0
    # More bits per weight, more bytes; the KV shape is the model's, whatever the format.
    assert q8.bytes_per_token.weights_bytes > levels["Q4_1"].bytes_per_token.weights_bytes  # type: ignore[union-attr]
    assert q8.bytes_per_token.kv_bytes_per_position == \
        levels["Q4_1"].bytes_per_token.kv_bytes_per_position  # type: ignore[union-attr]
    # The bandwidth: both kernels at the one thread count, with their method.
    assert results.bandwidth is not None
    assert sorted((b.kernel, b.threads) for b in results.bandwidth) == [("copy", 1),
                                                                        ("triad", 1)]
    for b in results.bandwidth:
        assert b.best_gb_s >= b.median_gb_s > 0 and len(b.times_s) == b.repeats == 2
        assert b.array_bytes == 64 << 20 and not b.meets_llc_rule
        assert b.method.startswith(f"STREAM-style {b.kernel}") and b.measured == "after"
    assert not validate_results(results, out.name).blocking


@pytest.mark.model
def test_memory_figures_by_hand_equal_the_registry(quick: tuple[Path, ResultsFile]) -> None:
    out, results = quick
    rows = summarize(results, validate_results(results, out.name), out.name).rows
    views = memory_views(results, rows)
    assert len(views) == 4
    fmt_factor = results.config.factors[0]
    for v in views:
        label = v.row.factors["format"]
        model = next(m for m in results.models
                     if m.level == fmt_factor.labels[fmt_factor.levels.index(label)])
        assert v.model == model and v.label == model.level
        runs = [r for r in results.runs if r.factors == v.row.factors]
        positions = statistics.fmean(r.prompt_tokens + (r.tokens - 1) / 2 for r in runs)
        est = model.bytes_per_token
        assert est is not None
        nbytes = est.weights_bytes + est.kv_bytes_per_position * positions
        tps = statistics.median(r.tokens_per_s for r in runs)
        bw = max(b.best_gb_s for b in results.bandwidth or [] if b.threads == 1)
        assert memory_value("mb_per_token", v) == pytest.approx(nbytes / 1e6)
        assert memory_value("effective_gb_s", v) == pytest.approx(nbytes * tps / 1e9)
        assert memory_value("bandwidth_share", v) == pytest.approx(nbytes * tps / 1e9 / bw)
        # No energy sensor in this test: null, with the reason.
        assert memory_value("j_per_gb", v) is None
        assert memory_reason("j_per_gb", v)
        # A filled context reads more KV than an empty one.
        assert v.kv_positions == pytest.approx(positions)
    by = {(v.label, v.fill): memory_value("mb_per_token", v) for v in views}
    assert by[("Q8_0", 64)] > by[("Q8_0", 0)] and by[("Q8_0", 0)] > by[("Q4_1", 0)]
    assert {FIGURES[n].kind for n in ("mb_per_token", "effective_gb_s", "bandwidth_share",
                                      "j_per_gb")} == {"memory"}


@pytest.mark.model
def test_the_quick_campaign_publishes_its_note(quick: tuple[Path, ResultsFile],
                                               tmp_path: Path) -> None:
    out, results = quick
    question = load_experiment("memory_bound").question
    assert question is not None
    rows = summarize(results, validate_results(results, out.name), out.name).rows
    outcome = question.answer(results, rows)
    site = tmp_path / "site"
    (site / "results").mkdir(parents=True)
    (site / "results" / out.name).write_bytes(out.read_bytes())
    (site / "notes").mkdir()
    built = build_site(SitePaths.default(
        REPO, results_dir=site / "results", notes_dir=site / "notes", docs_dir=site / "docs",
        site_dir=site / "html", published_dir=site / "published"), include_quick=True)
    [note] = [p for p in built.pages
              if p.startswith("notes/memory-bound-") and p.endswith("v1/index.md")]
    page = (site / "docs" / note).read_text()
    text = html.unescape(page)  # the prose escapes Markdown's characters as entities
    # Its title is its declared rule's outcome (a quick campaign: too few conditions, one
    # thread count, to decide; a title that asks).
    assert page.count(f"# {outcome.title}\n") == 1
    # Each variant's stored tensor types, as the results file records them.
    assert "its tensors as stored: Q8&#95;0 142.9 MB, F32 0.1 MB." in page
    # Its finding (the home page's line) is the rule's, escaped.
    assert f"**Finding:** {outcome.headline}\n" in text
    # The table per condition, with its columns and a row per condition linked to its runs.
    # Each column names its statistic: a median of runs, or a figure derived from the median.
    assert ("<th>format</th><th>model</th><th>threads</th><th>fill</th>"
            f"<th>tokens/s ({MEDIAN_OF_RUNS})</th><th>MB/token (estimate)</th>"
            "<th>effective GB/s (of the median)</th>"
            "<th>share of measured (of the median)</th>") in page
    table = page.split('data-kind="memory"')[1].split("</table>")[0]
    assert table.count("<tr><td>") == 4
    assert table.count('href="../../../raw/memory_bound-quick.html#') >= 8
    assert "MB/token is an estimate: bytes/token = W + KV(n)" in page
    # The roofline chart and the bandwidth table with its method.
    assert 'data-kind="roofline"' in page and '"mb"' in page
    assert 'data-kind="bandwidth"' in page and "STREAM-style triad (phase.bandwidth" in page
    # The rule's findings, one per test, escaped ("_" in Q8_0 is Markdown).
    assert all(f"- {p.sentence}\n" in text for p in outcome.parts)
    assert "by Q8&#95;0 at 1 thread&#40;s&#41;" in page
    assert f"Verdict: **{outcome.verdict}**." in page
    # Raw links like the first study: the results table, its downloads, the data page.
    assert (site / "docs" / "raw" / "memory_bound-quick.md").is_file()
    assert "make measure EXPERIMENT=memory_bound" in page  # not the speculative default

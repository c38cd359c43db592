"""Every chart phase draws is a valid Vega-Lite spec.

The site build skips Altair's per-chart schema validation (it cost more than drawing the
charts); this test does that validation instead, once per kind, on real campaign files: the
committed CPU campaign, the H200 campaign fixture and the site benchmark's synthetic campaign
(which has chip energy for every strategy).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from phase.publish.charts.energy import KINDS as ENERGY_KINDS
from phase.publish.charts.energy import build_chart
from phase.publish.charts.strategy import KINDS as STRATEGY_KINDS
from phase.publish.charts.strategy import build_strategy_chart
from phase.publish.data.datasets import load_dataset
from phase.validate import RuleSettings

REPO = Path(__file__).resolve().parents[1]
FILES = [REPO / "results/speculative-x86_64-2c-2026-11-30.json",
         REPO / "tests/fixtures/results/h200-campaign-512.json"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> list:
    # The site benchmark's synthetic campaign has chip energy with a ratio to plain for every
    # strategy (the H200 fixture's short runs have their energy rejected for sensor lag).
    from bench.site_bench import _factories, campaign

    synthetic = tmp_path_factory.mktemp("charts") / "speculative-synthetic.json"
    f = _factories()
    f.write_results(campaign(f, 0), synthetic)
    out = []
    for path in [*FILES, synthetic]:
        _, ds = load_dataset(path, RuleSettings())
        assert ds is not None, path
        out.append(ds)
    return out


@pytest.mark.slow
def test_every_chart_kind_is_a_valid_vega_lite_spec(datasets: list) -> None:
    schema = load_schema()
    drawn = set()
    for ds in datasets:
        charts = [build_strategy_chart(ds, k) for k in STRATEGY_KINDS]
        charts += [build_chart(ds.summary, k) for k in ENERGY_KINDS]
        for chart in charts:
            if chart.spec is None:
                assert chart.missing, chart.kind  # not drawn: the page says why
                continue
            validate_jsonschema(chart.spec, schema)
            drawn.add(chart.kind)
    # Between them the files draw every kind.
    assert drawn == set(STRATEGY_KINDS) | set(ENERGY_KINDS)


def test_an_invalid_spec_is_caught() -> None:
    with pytest.raises(Exception, match="bogus"):
        validate_jsonschema({"mark": "bogus", "data": {"values": []}}, load_schema())

"""A bad experiment file is refused with one `error: <file>: <field>: <what>; allowed: ...` line,
exit 2, no traceback and nothing written, whether run as `python FILE.py` or `phase measure
FILE.py`: every setting of the plan (each field out of its range or of the wrong type), every
field of a factor of every kind, a misspelt setting, any other error while the file runs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from sandbox import PHASE, assert_one_line_error

from phase import REPO_ROOT
from phase.base.errors import UsageProblem
from phase.campaign import DEFAULT_PLAN, Experiment, Factor
from phase.campaign.factors import KINDS
from phase.campaign.plan import CampaignPlan
from phase.campaign.plan_check import check_plan

PROMPTS = REPO_ROOT / "experiments" / "prompts"
GOOD = replace(DEFAULT_PLAN, prompts=("code",))

# A value of the wrong type for every field (strict: 1.5 is no whole number, "3" no number).
TEXT_FIELDS = ("target", "draft", "workload", "serving_pool", "blocked_by")
WRONG_TYPE: dict[str, Any] = {f.name: ("x" if f.name not in TEXT_FIELDS else 3)
                              for f in fields(CampaignPlan)}
WRONG_TYPE["factors"] = "x"  # not a tuple of factors (checked by the factors' own rule)
# A value of the right type out of its range, for every field that has a range.
OUT_OF_RANGE: dict[str, Any] = {
    "target": "", "draft": "", "prompts": ("",), "strategies": (), "tokens": 0, "repeats": 0,
    "n_ctx": 0, "threads": 0, "threads_batch": -1, "cooldown_s": -1.0,
    "idle_window_s": math.inf, "sample_hz": 0.0, "ngram_n_min": 0, "ngram_n_max": 0,
    "ngram_k": 0, "profile_blocks": 0, "profile_min_block_s": -0.1, "auto_objective": "speed",
    "disturbed_load": -0.1, "slow_vs_profile": math.nan, "slow_vs_condition": -1.0,
    "max_reruns": -1, "profile_max_retries": -1, "quiet_check_s": -1.0,
    "target_half_width": 1.0, "extra_runs": -1, "extra_time_s": -1.0, "purpose": "final",
    "max_passes": 0, "bandwidth_repeats": 0, "bandwidth_array_bytes": 0, "sample_top_k": -1,
    "sample_top_p": 0.0, "sample_min_p": 1.0, "seed": 1.5, "serving_requests": 0,
    "serving_pool": "", "serving_steady_b": 0, "serving_ttft_s": 0.0, "serving_tpot_s": -1.0,
    "serving_e2e_s": math.inf, "blocked_by": "",
}


@pytest.mark.parametrize("name", [f.name for f in fields(CampaignPlan)])
def test_every_setting_of_the_wrong_type_is_refused_naming_it(name: str) -> None:
    if name == "factors":
        return  # phase.campaign.factors checks them: test_every_factor_field_...
    with pytest.raises(UsageProblem) as err:
        check_plan(replace(GOOD, **{name: WRONG_TYPE[name]}))
    assert str(err.value).startswith(f"plan.{name}"), err.value
    assert "; allowed: " in str(err.value)


@pytest.mark.parametrize("name", sorted(OUT_OF_RANGE))
def test_every_setting_out_of_its_range_is_refused_with_the_range(name: str) -> None:
    with pytest.raises(UsageProblem) as err:
        check_plan(replace(GOOD, **{name: OUT_OF_RANGE[name]}))
    line = str(err.value)
    value = OUT_OF_RANGE[name]
    # A list whose items are held to a range (prompt names) names the item that is not.
    where = (f"plan.{name}[0]: {value[0]!r}: " if isinstance(value, tuple) and value
             else f"plan.{name}: {value!r}: ")
    assert line.startswith(where), line
    assert "; allowed: " in line and "\n" not in line


def test_the_committed_plans_and_the_defaults_pass() -> None:
    check_plan(GOOD)
    from phase.campaign import known_experiments, load_experiment

    for name in known_experiments():
        exp = load_experiment(name)
        check_plan(exp.plan)
        if exp.quick is not None:
            check_plan(exp.quick)


# One bad field of a factor, for every kind: (factor, the field the line names).
BAD_FACTORS: list[tuple[Factor, str]] = [
    (Factor("t", "temp", (1,)), "kind"),
    (Factor("t", 3, (1,)), "kind"),  # type: ignore[arg-type]
    (Factor("T", "custom", (1,)), "name"),
    (Factor(None, "custom", (1,)), "name"),  # type: ignore[arg-type]
    (Factor("t", "custom", [1]), "levels"),  # type: ignore[arg-type]
    (Factor("t", "custom", (1, 2), labels=("a",)), "labels"),
    (Factor("t", "custom", (1,), labels=(1,)), "labels"),  # type: ignore[arg-type]
    (Factor("t", "custom", (math.nan,)), "levels[0]"),
    (Factor("t", "custom", (None,)), "levels[0]"),  # type: ignore[arg-type]
    *[(Factor("t", kind, ()), "levels") for kind in KINDS],
    (Factor("t", "threads", (2, 1.5)), "levels[1]"),
    (Factor("t", "tokens", (True,)), "levels[0]"),
    (Factor("t", "context_fill", (-1,)), "levels[0]"),
    (Factor("t", "concurrency", (4, 0)), "levels[1]"),
    (Factor("t", "concurrency", (2.5,)), "levels[0]"),
    (Factor("t", "temperature", (0, math.inf)), "levels[1]"),
    (Factor("t", "temperature", ("hot",)), "levels[0]"),
    (Factor("t", "model", ("",)), "levels[0]"),
    (Factor("t", "model", ("variant:x",)), "levels[0]"),
    (Factor("t", "custom", ("a b",)), "labels[0]"),
]


@pytest.mark.parametrize(("factor", "field"), BAD_FACTORS,
                         ids=[f"{f.kind}-{w}-{i}" for i, (f, w) in enumerate(BAD_FACTORS)])
def test_every_factor_field_of_every_kind_is_refused_naming_it(factor: Factor,
                                                               field: str) -> None:
    with pytest.raises(UsageProblem) as err:
        Experiment("x", None, "", PROMPTS, GOOD, factors=(factor,))
    assert str(err.value).startswith(f"factors[0].{field}: "), err.value
    assert "; allowed: " in str(err.value)


# --- the file, as a user runs it --------------------------------------------------------------

HEAD = f"""\
import sys
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, {str(REPO_ROOT)!r})
if __name__ == "__main__":
    from phase.cli.measure import run_file
    run_file(__file__)
from phase.campaign import DEFAULT_PLAN, Experiment, Factor
from phase.models.sources import TEST_MODEL
"""
BODY = """\
PLAN = replace(DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
               strategies=("plain",), tokens=4, repeats=1, cooldown_s=0.0,
               idle_window_s=0.0{settings})
EXPERIMENT = Experiment(name="bad", note=None, description="x",
                        prompts_dir=Path({prompts!r}), plan=PLAN,
                        factors=(Factor("temperature", {kind!r}, (0, 0.7)),))
"""
# (id, settings appended to the plan, the factor's kind, what the line names)
FILES = [
    ("unknown-kind", "", "temp", "factors[0].kind: unknown kind 'temp'"),
    ("top-p", ", sample_top_p=1.5", "temperature", "plan.sample_top_p: 1.5"),
    ("min-p", ", sample_min_p=-0.1", "temperature", "plan.sample_min_p: -0.1"),
    ("top-k", ", sample_top_k=-5", "temperature", "plan.sample_top_k: -5"),
    ("seed", ", seed=2.5", "temperature", "plan.seed: 2.5"),
    ("misspelt", ", sample_topp=0.9", "temperature", "line 10: TypeError"),
    # pydantic's own error, raised while the file runs: named by its model and field.
    ("pydantic", ", confirms=__import__('phase.results').results.Confirms(campaign_id=1)",
     "temperature", "Confirms.campaign_id: 1"),
]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.slow  # each case a separate process (not in `make test-fast`)
@pytest.mark.parametrize("how", ["script", "measure"])
@pytest.mark.parametrize(("settings", "kind", "needle"), [f[1:] for f in FILES],
                         ids=[f[0] for f in FILES])
def test_a_bad_experiment_file_is_one_line_and_nothing_is_written(
        tmp_path: Path, how: str, settings: str, kind: str, needle: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(HEAD + BODY.format(settings=settings, prompts=str(PROMPTS), kind=kind))
    out = tmp_path / "out"
    out.mkdir()
    before = _listing(tmp_path)
    command = ([sys.executable, str(path)] if how == "script"
               else [PHASE, "measure", str(path)])
    proc = subprocess.run([*command, "--no-sensor", "-o", str(out / "r.json")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ}, stdin=subprocess.DEVNULL)
    line = assert_one_line_error(proc, 2, f"error: {path}: ", needle, "; allowed: ")
    assert "allowed: " in line
    assert _listing(tmp_path) == before, "the refused experiment left something behind"

"""levels (blocking): every run and reference is at levels the experiment declares.

An experiment's extra factors (config.factors) each declare their levels; every condition is
a prompt x strategy x one declared level of each (phase.results.schedule). Read by name,
never by the order of the JSON keys:

- a run names a level of every declared factor, names no factor the config does not declare,
  and each level is one of its factor's declared levels (a run at 3 threads in an experiment
  that declared 1 and 2 measured something nobody asked, and would be tabled beside them);
- a plain reference names exactly the run-output factors (tokens, context_fill, model:
  phase.results.levels.OUTPUT_KINDS), each at a declared level;
- a target model loaded for a `model` level (`models[].level`) names one of that factor's
  labels.

A level is compared by value and type: 2 and "2" and 2.0 are different levels in the file.
"""

from __future__ import annotations

from collections.abc import Mapping

from phase.results import Level, ResultsFile
from phase.results.config import FactorSpec
from phase.results.levels import OUTPUT_KINDS
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def _same(a: Level, b: Level) -> bool:
    return type(a) is type(b) and a == b


def problems(levels: Mapping[str, Level], factors: list[FactorSpec]) -> list[tuple[str, str]]:
    """(message, the JSON path's tail under the record) for each level that is not one of
    the declared factors' declared levels, each factor missing, each name undeclared."""
    declared = {f.name: f for f in factors}
    out = []
    for name, level in levels.items():
        factor = declared.get(name)
        if factor is None:
            out.append((f"level {name}={level!r} of a factor config.factors does not declare "
                        f"(declared: {', '.join(declared) or 'none'})", f"factors.{name}"))
        elif not any(_same(level, v) for v in factor.levels):
            out.append((f"{name}={level!r} is not a level factor {name!r} declares "
                        f"({factor.levels})", f"factors.{name}"))
    for name in declared:
        if name not in levels:
            out.append((f"no level of declared factor {name!r} ({declared[name].levels})",
                        "factors"))
    return out


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    factors = results.config.factors
    out: list[Finding] = []
    for i, run in enumerate(results.runs):
        for message, tail in problems(run.factors, factors):
            out.append(ctx.finding("levels", "blocking", message, run=run,
                                   json_path=f"$.runs[{i}].{tail}"))
    labels = [label for f in factors if f.kind == "model" for label in f.labels]
    for i, model in enumerate(results.models):
        if model.level is not None and model.level not in labels:
            out.append(ctx.finding(
                "levels", "blocking", f"model {model.name} was loaded for level "
                f"{model.level!r}, which no model factor declares (labels: {labels})",
                json_path=f"$.models[{i}].level"))
    output = [f for f in factors if f.kind in OUTPUT_KINDS]
    for i, ref in enumerate(results.references):
        for message, tail in problems(ref.factors, output):
            out.append(ctx.finding("levels", "blocking", f"plain reference: {message}",
                                   prompt=ref.prompt, json_path=f"$.references[{i}].{tail}"))
    return out


RULE = Rule(order=25, check=check)

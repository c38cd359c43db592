"""confirmation (blocking): a confirmation campaign (ResultsFile.confirms) measures exactly the
condition it says it confirms and plain decoding at the same levels, nothing else, in a fixed
design without shuffling (the two alternate), so its runs are fresh evidence for that one
condition and for no other.

Blocking: a run of any other condition; config strategies or prompts beyond the two (a
serving campaign's condition is on its pool of prompts: the confirmation serves that pool); a
factor whose levels are not the confirmed condition's one level; a design that is adaptive,
shuffled or blocked. The selection file itself is compared (its sha256, its models) where the
site has both files (phase.publish.data.confirmations).
"""

from __future__ import annotations

from phase.analysis.queries import PLAIN, condition_key
from phase.policy.strategies import is_baseline
from phase.results import ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    confirms = results.confirms
    if confirms is None:
        return []
    out: list[Finding] = []
    config = results.config

    def block(message: str, path: str, **numbers: float) -> None:
        out.append(ctx.finding("confirmation", "blocking", message, json_path=path,
                               numbers=numbers or None))

    # The baseline once and the confirmed strategy once, nothing else (a confirmation
    # builds its strategies as (PLAIN, the strategy), phase.campaign.confirm).
    baselines = [s for s in config.strategies if is_baseline(s)]
    others = [s for s in config.strategies if not is_baseline(s)]
    confirmed = [] if is_baseline(confirms.strategy) else [confirms.strategy]
    if len(baselines) != 1 or others != confirmed:
        block(f"strategies {config.strategies}: a confirmation of {confirms.strategy} runs "
              f"only it and {PLAIN}", "$.config.strategies")
    if config.serving is not None:
        # A serving condition's prompt is its pool: the confirmation serves the same pool.
        if config.serving.pool != confirms.prompt:
            block(f"serving pool {config.serving.pool!r}: a confirmation of a condition on "
                  f"{confirms.prompt!r} serves that pool", "$.config.serving.pool")
    elif [p.name for p in config.prompts] != [confirms.prompt]:
        block(f"prompts {[p.name for p in config.prompts]}: a confirmation on "
              f"{confirms.prompt!r} runs only that prompt", "$.config.prompts")
    for i, factor in enumerate(config.factors):
        wanted = confirms.factors.get(factor.name)
        if factor.levels != [wanted]:
            block(f"factor {factor.name} has levels {factor.levels}; the confirmed condition's "
                  f"is {wanted!r} alone", f"$.config.factors[{i}].levels")
    if config.target_half_width is not None or config.shuffle or config.blocked_by:
        block("a confirmation alternates the condition and plain in a fixed design: no "
              "adaptive rounds, no shuffling, no blocks", "$.config")
    levels = tuple(confirms.factors.items())
    for i, run in enumerate(results.runs):
        prompt, strategy, at = condition_key(run)
        if (prompt, at) != (confirms.prompt, levels) or not (
                strategy == confirms.strategy or is_baseline(strategy)):
            block(f"run {run.id} ({run.prompt} × {run.strategy}) is not the confirmed "
                  f"condition nor its plain baseline", f"$.runs[{i}]")
    return out


RULE = Rule(order=100, check=check)

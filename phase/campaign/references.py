"""The plain references a campaign decodes before its measured runs (also its warm-up): one per
prompt, and per combination of the levels that change plain decoding's output
(phase.results.levels: tokens, context fill). Every run's `matches_plain` and divergence
evidence compare its tokens with the reference of its prompt at its levels."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from phase.base.errors import PhaseError
from phase.decode import Engine
from phase.policy.strategies import parse_strategy
from phase.results import (
    CampaignConfig,
    Level,
    PlainReference,
    PromptSpec,
    ShardInfo,
    token_sha256,
)
from phase.results.levels import OUTPUT_KINDS, fill_tokens, filled, run_tokens
from phase.results.schedule import combinations

# A reference's key: the prompt and its output levels, in declared order.
RefKey = tuple[str, tuple[tuple[str, Level], ...]]


def ref_key(prompt: str, levels: Mapping[str, Level]) -> RefKey:
    return (prompt, tuple(levels.items()))


def output_levels(config: CampaignConfig) -> list[dict[str, Level]]:
    """Every combination of the output factors' levels ([{}] when there are none)."""
    factors = [f for f in config.factors if f.kind in OUTPUT_KINDS]
    return [dict(c.levels) for c in combinations(factors)]


def decode_references(engine_for: Callable[[Mapping[str, Level]], Engine],
                      config: CampaignConfig, prompts: Sequence[PromptSpec],
                      prompt_tokens: Mapping[str, list[int]], stored: list[PlainReference],
                      shard: ShardInfo | None, say: Callable[[str], None], output: Path,
                      ) -> tuple[dict[RefKey, PlainReference], dict[str, float],
                                 dict[str, float]]:
    """Plain decoding of every prompt at every output combination, with each token's top-2
    logit gap as evidence for later divergences; a resumed campaign must reproduce the
    references it recorded before, or its runs would not compare. New ones are appended to
    `stored`. Also each prompt's first reference's decode time (what windows are sized by)
    and prefill time (what the stated duration adds per run)."""
    known = {ref_key(r.prompt, r.factors): r for r in stored}
    refs: dict[RefKey, PlainReference] = {}
    plain_s: dict[str, float] = {}
    prefill_s: dict[str, float] = {}
    for prompt in prompts:
        if shard is not None and prompt.name not in shard.prompts:
            continue  # another shard runs this prompt, and generates its reference
        for levels in output_levels(config):
            at = "".join(f", {n}={v}" for n, v in levels.items())
            say(f"plain reference (and warm-up) for prompt '{prompt.name}'{at}")
            context = filled(prompt_tokens[prompt.name], fill_tokens(config, levels))
            result = engine_for(levels).run(context, parse_strategy("plain"),
                                            run_tokens(config, levels), record_gaps=True)
            plain_s.setdefault(prompt.name, result.decode_s)
            prefill_s.setdefault(prompt.name, result.prefill_s)
            key = ref_key(prompt.name, levels)
            sha = token_sha256(result.token_ids)
            old = known.get(key)
            if old is not None and old.output_sha256 != sha:
                raise PhaseError(
                    f"{output}: plain output for '{prompt.name}'{at} differs from the one "
                    "recorded before the interruption (same models and config); resuming would "
                    "mix incomparable runs. Start a new campaign."
                )
            if old is None:
                old = PlainReference(prompt=prompt.name, output_sha256=sha,
                                     token_ids=list(result.token_ids),
                                     top2_gaps=result.top2_gaps,
                                     prompt_token_ids=context, factors=levels)
                stored.append(old)
            refs[key] = old
    return refs, plain_s, prefill_s


def first_per_prompt(refs: Mapping[RefKey, PlainReference]) -> dict[str, list[int]]:
    """Each prompt's first reference's tokens (at the first output levels): the history the
    cost profile times passes after."""
    out: dict[str, list[int]] = {}
    for (prompt, _), ref in refs.items():
        out.setdefault(prompt, ref.token_ids)
    return out

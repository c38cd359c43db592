"""What a run's levels of the extra factors (config.factors) mean for the run itself: how many
tokens it generates, the context it decodes after, and which plain reference it is compared
with. Part of the results contract: the campaign applies these and validation checks them.

    tokens        a `tokens` level is the run's token count (else config.tokens)
    context_fill  a `context_fill` level N puts N tokens before the prompt's own: the prompt's
                  tokens repeated and cut to N (`filled`), so the KV cache holds N + prompt
                  tokens when decoding starts
    references    a plain reference per prompt and per combination of the levels that change
                  plain decoding's output (tokens, context_fill, model: OUTPUT_KINDS)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from phase.results.config import CampaignConfig, Level
from phase.results.schema import PlainReference, ResultsFile

# Kinds whose level changes what plain decoding of a prompt outputs; threads and custom do not.
OUTPUT_KINDS = frozenset({"tokens", "context_fill", "model"})


def level_of(config: CampaignConfig, levels: Mapping[str, Level], kind: str) -> Level | None:
    """The run's level of the factor of this kind, or None when the experiment has none."""
    for factor in config.factors:
        if factor.kind == kind and factor.name in levels:
            return levels[factor.name]
    return None


def run_temperature(config: CampaignConfig, levels: Mapping[str, Level]) -> float:
    """The sampling temperature of a run at these levels: 0 (greedy) without a temperature
    factor or at its level 0."""
    level = level_of(config, levels, "temperature")
    return float(level) if level is not None else 0.0


def run_seed(campaign_seed: int, run_id: str) -> int:
    """A sampled run's seed from the campaign's and its id (config.SEED_RULE): fixed by the
    file alone, distinct per run, and below llama.cpp's "seed from the clock" value."""
    digest = hashlib.sha256(f"{campaign_seed}/{run_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def load_seed(campaign_seed: int, repeat: int, levels: Mapping[str, Level]) -> int:
    """A serving load's seed from the campaign's, the repeat and the run's factor levels: the
    same for every strategy there, distinct per repeat and levels (run_seed's rule over the key
    `load/r<repeat>/<levels as sorted JSON>`)."""
    key = json.dumps(dict(sorted(levels.items())), separators=(",", ":"))
    return run_seed(campaign_seed, f"load/r{repeat}/{key}")


def serving_seed(config: CampaignConfig, slot: str, repeat: int,
                 levels: Mapping[str, Level]) -> int:
    """The seed of a serving run's request order (config.serving.order_seed): its load's
    (`load_seed`), or, in files before schema 17, its slot's (`run_seed` of the run's id, or
    for a re-run the id of the run it repeats)."""
    if config.serving is not None and config.serving.order_seed == "load":
        return load_seed(config.seed, repeat, levels)
    return run_seed(config.seed, slot)


def run_tokens(config: CampaignConfig, levels: Mapping[str, Level]) -> int:
    """Tokens a run at these levels generates: its `tokens` level, else config.tokens."""
    level = level_of(config, levels, "tokens")
    return int(level) if level is not None else config.tokens


def fill_tokens(config: CampaignConfig, levels: Mapping[str, Level]) -> int:
    """Tokens put before the prompt's own at these levels (0 without a context_fill factor)."""
    level = level_of(config, levels, "context_fill")
    return int(level) if level is not None else 0


def filled(prompt_tokens: Sequence[int], fill: int) -> list[int]:
    """The context a run decodes after: `fill` tokens of the prompt repeated, then the prompt.
    The prompt's own tokens, not other text: deterministic, in the model's own vocabulary, and
    nothing whose tokenization differs between model variants; decode cost depends on the
    cache's length, not its content (for plain decoding: a proposer that copies from the
    context would find the repeat, which is why a fill study fixes the strategy to plain)."""
    if fill <= 0 or not prompt_tokens:
        return list(prompt_tokens)
    repeats = -(-fill // len(prompt_tokens))
    return (list(prompt_tokens) * repeats)[:fill] + list(prompt_tokens)


def reference_levels(config: CampaignConfig, levels: Mapping[str, Level]) -> dict[str, Level]:
    """The levels among these that change plain decoding's output, in declared order."""
    names = [f.name for f in config.factors if f.kind in OUTPUT_KINDS]
    return {name: levels[name] for name in names if name in levels}


def reference_for(results: ResultsFile, prompt: str,
                  levels: Mapping[str, Level]) -> PlainReference | None:
    """The plain reference a run of this prompt at these levels is compared with."""
    wanted = reference_levels(results.config, levels)
    return next((r for r in results.references
                 if r.prompt == prompt and r.factors == wanted), None)

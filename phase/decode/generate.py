"""One generation from the command line: resolve models, run a strategy, return a record.

Greedy by default; with sampling settings, the campaigns' sampled loops (phase.decode.
sampled_timed.run_sampled: llama.cpp's sampler chain for plain, rejection sampling over the
same distribution for a proposer), so any strategy run again with the same seed gives the
same text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from phase.base.errors import UsageProblem
from phase.decode.engine import Engine
from phase.decode.profiler import ProfileContext, ProfileSettings
from phase.decode.sampled_timed import run_sampled
from phase.decode.template import format_prompt
from phase.decode.vocab import check_compatible
from phase.decode.vocab_file import VocabFile, check_fit
from phase.policy.result import compare_to_plain
from phase.policy.sampling import SamplingSettings
from phase.policy.strategies import Strategy, parse_strategy


@dataclass(frozen=True)
class GenerateRequest:
    model: str
    draft: str | None
    strategy: str
    n_tokens: int
    prompt: str
    n_ctx: int
    raw: bool = False
    threads: int | None = None
    compare_plain: bool = False
    # None: greedy decoding.
    sampling: SamplingSettings | None = None


def _check_sampling(req: GenerateRequest, strategy: Strategy) -> None:
    if req.sampling is None:
        return
    if not strategy.family.samples:
        raise UsageProblem(f"{strategy.label} has no sampled variant: leave out --temperature")
    if req.compare_plain:
        raise UsageProblem("--compare-plain compares greedy outputs token for token; a sampled "
                           "output is compared by its distribution (the sampled campaigns' "
                           "exactness test): leave out one of --compare-plain, --temperature")


def generate(req: GenerateRequest, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run `req` and return its record: the DecodeResult fields plus model names, the strategy
    and, with compare_plain, whether the output equals plain decoding's."""
    from phase.models.sources import resolve

    say = progress or (lambda _m: None)
    strategy = parse_strategy(req.strategy)
    _check_sampling(req, strategy)
    if strategy.family.needs_draft and not req.draft:
        raise UsageProblem(f"{strategy.label} needs a draft model: pass --draft NAME|PATH")
    target = resolve(req.model, progress=lambda m: say(f"target: {m}"))
    draft = None
    if strategy.family.uses_draft and req.draft:
        draft = resolve(req.draft, progress=lambda m: say(f"draft: {m}"))
    # Every check before the weights load: tokenize and fit with the vocabulary alone.
    with VocabFile(target.path) as vocab:
        prompt = format_prompt(vocab, req.prompt, chat_template=not req.raw)
        check_fit(len(prompt), req.n_tokens, req.n_ctx)
        if draft is not None:
            with VocabFile(draft.path) as draft_vocab:
                check_compatible(vocab.vocab_info(), draft_vocab.vocab_info(),
                                 names=(target.path.name, draft.path.name))
    say(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else ""))
    with Engine(target.path, draft.path if draft else None, n_ctx=req.n_ctx,
                n_threads=req.threads, n_threads_batch=req.threads) as engine:
        if strategy.family.needs_profile:
            profile_for(engine, prompt, req.n_tokens, say)
        result = (engine.run(prompt, strategy, req.n_tokens) if req.sampling is None
                  else run_sampled(engine, prompt, strategy, req.n_tokens, req.sampling))
        record: dict[str, Any] = {
            "model": target.name,
            "model_path": str(target.path),
            "draft": draft.name if draft else None,
            "chat_template": not req.raw,
            "sampling": req.sampling.as_dict() if req.sampling is not None else None,
            **result.to_dict(),
        }
        if req.compare_plain:
            plain = (result if not strategy.family.takes_k
                     else engine.run(prompt, parse_strategy("plain"), req.n_tokens))
            matches, divergence = compare_to_plain(result.token_ids, plain.token_ids)
            record["matches_plain"] = matches
            record["first_divergence"] = divergence
            record["plain_tokens_per_s"] = plain.tokens_per_s
    return record


def profile_for(engine: Engine, prompt: list[int], n_tokens: int,
                 say: Callable[[str], None]) -> None:
    """auto decides with measured costs: profile at this run's mid-run fill first (the
    prompt repeated fills the cache past the prompt; what it holds does not change costs)."""
    history = list(prompt)
    while len(history) < len(prompt) + n_tokens + 1:
        history.extend(prompt)
    say("auto: timing target" + (" and draft" if engine.draft else "") + " passes first")
    engine.use_profile(engine.profile(
        [ProfileContext(None, history, len(prompt) + n_tokens // 2)], ProfileSettings(),
        energy_reason="phase generate reads no energy sensor"))


def summary_lines(record: dict[str, Any]) -> list[str]:
    """The run's numbers, for people."""
    lines = [
        f"{record['strategy']}: {len(record['token_ids'])} tokens in {record['decode_s']:.3f} s "
        f"= {record['tokens_per_s']:.1f} tok/s; prefill {record['prompt_tokens']} prompt tokens "
        f"in {record['prefill_s']:.3f} s; {record['steps']} target steps; "
        f"CPU {record['cpu_s']:.2f} s ({record['n_threads']} threads)"
    ]
    sampling = record.get("sampling")
    if sampling is not None:
        lines.append("sampled: temperature {temperature:g}, top-k {top_k}, top-p {top_p:g}, "
                     "min-p {min_p:g}, seed {seed}".format(**sampling))
    if record["acceptance"] is None:
        lines.append(f"drafted {record['drafted']}, accepted {record['accepted']}: "
                     f"acceptance n/a ({record['acceptance_reason']})")
    else:
        lines.append(f"drafted {record['drafted']}, accepted {record['accepted']}: "
                     f"acceptance {record['acceptance']:.1%}")
    if "matches_plain" in record:
        if record["matches_plain"]:
            lines.append(f"output matches plain decoding "
                         f"(plain {record['plain_tokens_per_s']:.1f} tok/s)")
        else:
            lines.append(f"output DIFFERS from plain decoding from token "
                         f"{record['first_divergence']} (plain {record['plain_tokens_per_s']:.1f} "
                         "tok/s)")
    return lines

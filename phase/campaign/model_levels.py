"""A `model` factor's levels: one target model per level, resolved, checked and loaded before
anything is measured, and the engine each run decodes with.

Every level must tokenize the campaign's prompts exactly as the plan's target does (the
variants of one model, `phase models variant`, all do), so one prompt's tokens, context fill
and token counts mean the same thing at every level; a level that does not is refused before
anything is written. Each level gets its own `Engine` (the draft, if any, loaded beside it),
held for the whole campaign: the models this is for are small. The results file records
each level's model as a `target` with its `level` label (ModelInfo.level).

A level may name a derived variant, `variant:SOURCE:FORMAT` (phase.decode.variants): it is
derived by llama.cpp's quantizer, or found in the cache, when the levels are resolved, and
its recipe and stored tensor types are recorded with its sha256 (ModelInfo.variant).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from phase.base.errors import UsageProblem
from phase.campaign.factors import Factor
from phase.costmodel.bytes_per_token import FORMULA, of_file
from phase.decode import Engine
from phase.decode.template import format_prompt
from phase.decode.variants import Variant, derive, parse_spec
from phase.decode.vocab import check_compatible
from phase.decode.vocab_file import VocabFile
from phase.models.sources import ResolvedModel, is_test_model, resolve
from phase.results import BytesEstimate, Level, ModelInfo, PromptSpec, VariantInfo


def model_info(role: str, resolved: ResolvedModel, vocab: VocabFile,
               level: str | None = None) -> ModelInfo:
    """What the results file records of a model."""
    meta = vocab.info()
    return ModelInfo.model_validate({
        "role": role,
        "name": resolved.name,
        "source": resolved.source,
        "path": str(resolved.path),
        "size_bytes": resolved.size_bytes,
        "sha256": resolved.sha256,
        "architecture": meta.get("architecture"),
        "quant": meta.get("quant"),
        "n_vocab": meta["n_vocab"],
        "test_model": is_test_model(resolved.sha256),
        "level": level,
    })


def variant_info(spec: str, variant: Variant) -> VariantInfo:
    return VariantInfo(spec=spec, recipe=variant.recipe, stored_types=variant.stored_types)


def with_estimate(info: ModelInfo) -> ModelInfo:
    """The model's record with the inputs of its bytes-per-token estimate (from its header)."""
    est = of_file(info.path, 0)
    return info.model_copy(update={"bytes_per_token": BytesEstimate(
        weights_bytes=est.weights, kv_bytes_per_position=est.kv.bytes_per_position,
        kv_type=est.kv.kv_type, formula=FORMULA)})


def model_factor(factors: Sequence[Factor]) -> Factor | None:
    return next((f for f in factors if f.kind == "model"), None)


@dataclass
class ModelLevels:
    """Each level's model file (by level), and once loaded its engine."""

    files: dict[Level, ResolvedModel] = field(default_factory=dict)
    labels: dict[Level, str] = field(default_factory=dict)
    variants: dict[Level, Variant] = field(default_factory=dict)
    engines: dict[Level, Engine] = field(default_factory=dict)

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()


def resolve_levels(factors: Sequence[Factor], say: Callable[[str], None]) -> ModelLevels:
    """The model factor's level files, fetched and verified (sha256) but not loaded; a
    variant level derived (or found in the cache) from its source."""
    found = ModelLevels()
    factor = model_factor(factors)
    if factor is None:
        return found
    for i, level in enumerate(factor.levels):
        label = factor.label_of(i)
        progress = lambda m, at=label: say(f"{factor.name}={at}: {m}")  # noqa: E731
        parsed = parse_spec(str(level))
        if parsed is None:
            found.files[level] = resolve(str(level), progress=progress)
        else:
            variant = derive(resolve(parsed[0], progress=progress), parsed[1],
                             progress=progress)
            found.files[level], found.variants[level] = variant.model, variant
        found.labels[level] = label
    return found


def check_levels(levels: ModelLevels, prompts: Sequence[PromptSpec],
                 tokens: Mapping[str, list[int]], target: ResolvedModel,
                 chat_template: bool) -> list[ModelInfo]:
    """Each level's vocabulary against the target's and its tokens of every prompt; what the
    results file records of each level's model."""
    out = []
    with VocabFile(target.path) as target_vocab:
        for level, model in levels.files.items():
            with VocabFile(model.path) as vocab:
                check_compatible(target_vocab.vocab_info(), vocab.vocab_info(),
                                 names=(target.path.name, model.path.name))
                for p in prompts:
                    if format_prompt(vocab, p.text, chat_template=chat_template) != \
                            tokens[p.name]:
                        raise UsageProblem(
                            f"model level {levels.labels[level]!r} ({model.path.name}) "
                            f"tokenizes prompt '{p.name}' differently from the target "
                            f"{target.path.name}: a model factor's levels must be variants "
                            "of one model (phase models variant)")
                info = model_info("target", model, vocab, levels.labels[level])
                if level in levels.variants:
                    info = info.model_copy(update={
                        "variant": variant_info(str(level), levels.variants[level])})
                out.append(info)
    return out


def load_levels(levels: ModelLevels, draft: ResolvedModel | None, n_ctx: int,
                threads: int | None, threads_batch: int | None,
                say: Callable[[str], None]) -> None:
    """An engine per level (closed by `levels.close()`, also when a later one fails)."""
    for level, model in levels.files.items():
        say(f"loading {model.path.name} (model level {levels.labels[level]})")
        levels.engines[level] = Engine(str(model.path), str(draft.path) if draft else None,
                                       n_ctx=n_ctx, n_threads=threads,
                                       n_threads_batch=threads_batch or threads)

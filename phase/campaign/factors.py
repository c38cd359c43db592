"""An experiment's extra factors: what varies besides the prompt and the strategy.

    Factor("threads", "threads", (1, 2, 4))              # llama.cpp threads for the run
    Factor("tokens", "tokens", (64, 256))                # tokens generated
    Factor("fill", "context_fill", (0, 2048))            # KV cache filled before the prompt
    Factor("format", "model", ("q4.gguf", "f16.gguf"), labels=("q4", "f16"))
    Factor("temperature", "temperature", (0, 0.7))       # 0: greedy; above: sampled
    Factor("note", "custom", ("a", "b"))                 # recorded only

Every experiment has the prompt and strategy factors (its plan's `prompts` and `strategies`,
a single level each where it varies neither); `Experiment.factors` adds these. A condition is
one prompt, one strategy and one level of each extra factor; a run records its levels
(`Run.factors`) and its id names them (`r0-code-plain-threads=2`).

How a level applies to a run, by kind:

* `threads`: llama.cpp's decode and prefill threads (`Engine.set_threads`, no reload);
* `tokens`: the run's token count; `context_fill`: tokens put before the prompt's own (the
  prompt repeated, phase.results.levels.filled); each changes plain decoding's output, so the
  campaign decodes a plain reference per prompt and combination of their levels
  (phase.campaign.references);
* `model`: the target model the run decodes with, an engine per level held for the campaign
  (phase.campaign.model_levels; levels must tokenize the prompts as the target does). A level
  is a model spec: an embedded name, a .gguf path, hf:OWNER/REPO/FILE, or a derived variant
  `variant:SOURCE:FORMAT` (SOURCE one of the others, FORMAT a llama.cpp storage format:
  `variant:qwen2.5-coder-0.5b:Q8_0`), derived or reused from the cache before any weights
  load, its recipe recorded (phase.decode.variants). A variant spec holds ':', which a label
  may not: give `labels`, e.g. ("q8_0", ...);
* `temperature`: 0 decodes greedily (the timed greedy loops, unchanged); a level above 0
  samples at that temperature with the plan's truncation (`sample_top_k`, `sample_top_p`,
  `sample_min_p`) and a seed derived from the campaign's seed and the run's id
  (phase.results.levels.run_seed), through the sampled loops (phase.decode.sampled_timed);
  the plain reference stays greedy, and a sampled run is compared with it in distribution
  only (the equivalence rule);
* `concurrency`: the run is a serving run: `config.serving.requests` requests drawn from the
  prompts in a seeded order, this many decoded together (phase.campaign.serving_run);
* `custom`: nothing; the level is recorded, for the experiment's own analysis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, get_args

from phase.base.errors import UsageProblem
from phase.results import FactorSpec, Level
from phase.results.config import FactorKind
from phase.results.schedule import Levels

if TYPE_CHECKING:
    from phase.decode import Engine

KINDS: tuple[str, ...] = get_args(FactorKind)
# What the runner applies today (the rest are refused before anything is written).
RUNNABLE = frozenset({"threads", "tokens", "context_fill", "model", "temperature", "custom",
                      "concurrency"})
# Names the run id and the results file already use for their own parts.
RESERVED = frozenset({"prompt", "strategy", "repeat", "k", "rerun"})
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# A label goes into run ids and page anchors: letters, digits and . _ + only.
_LABEL = re.compile(r"^[A-Za-z0-9._+]+$")


@dataclass(frozen=True)
class Factor:
    """One extra factor: its `name` (lower case, in run ids), its `kind` (one of KINDS), its
    `levels` in the order pages show them, and a label per level (default: the level as
    text) for ids and pages."""

    name: str
    kind: str
    levels: tuple[Level, ...]
    labels: tuple[str, ...] = field(default=())

    def label_of(self, index: int) -> str:
        return self.labels[index] if self.labels else str(self.levels[index])

    def spec(self) -> FactorSpec:
        """The factor as the results file records it (config.factors)."""
        # kind is a str here; FactorSpec's Literal is checked by pydantic when it is built.
        return FactorSpec(name=self.name, kind=self.kind,  # type: ignore[arg-type]
                          levels=list(self.levels),
                          labels=[self.label_of(i) for i in range(len(self.levels))])


# What each kind's levels allow, in words (the `allowed:` part of a refusal).
ALLOWED_LEVELS = {
    "threads": "whole numbers of at least 1",
    "tokens": "whole numbers of at least 1",
    "concurrency": "whole numbers of requests decoded together, at least 1",
    "context_fill": "whole numbers of tokens, 0 or more",
    "temperature": "finite numbers, 0 (greedy) or more",
    "model": "model specs: an embedded name, a .gguf path, hf:OWNER/REPO/FILE or "
             "variant:SOURCE:FORMAT",
    "custom": "text or finite numbers",
}


def _level_problem(factor: Factor, level: Level) -> str | None:
    """Why a level does not suit its factor's kind, or None."""
    count = level if isinstance(level, int) and not isinstance(level, bool) else None
    if factor.kind in ("threads", "tokens", "concurrency") and not (
            count is not None and count >= 1):
        return "must be a whole number of at least 1"
    if factor.kind == "context_fill" and not (count is not None and count >= 0):
        return "must be a whole number of tokens, 0 or more"
    if factor.kind == "temperature" and not (
            isinstance(level, (int, float)) and not isinstance(level, bool)
            and math.isfinite(level) and level >= 0):
        return "must be a temperature: a finite number, 0 (greedy) or more"
    if factor.kind == "model" and not (isinstance(level, str) and level):
        return ("must be a model spec (an embedded name, a .gguf path, hf:OWNER/REPO/FILE or "
                "variant:SOURCE:FORMAT)")
    if factor.kind == "model":
        return _variant_problem(level)  # type: ignore[arg-type]  # a str: checked above
    if isinstance(level, bool) or not isinstance(level, (str, int, float)) or (
            isinstance(level, float) and not math.isfinite(level)):
        return "must be text or a finite number"
    return None


def _variant_problem(spec: str) -> str | None:
    # Imported here: the quantizer's format names come from llama.cpp's binding, which a
    # declaration without variants need not load.
    from phase.decode.variants import parse_spec
    from phase.models.sources import ModelError

    try:
        parse_spec(spec)
    except ModelError as exc:
        return f"is not a variant spec: {exc}"
    return None


def _shape_problems(where: str, factor: Factor) -> list[str]:
    """A field of the wrong type: no level or label check can read it."""
    problems = []
    if not isinstance(factor.name, str):
        problems.append(f"{where}.name: {factor.name!r} is not text; allowed: lower case "
                        "letters, digits and _")
    if not isinstance(factor.kind, str):
        problems.append(f"{where}.kind: {factor.kind!r} is not text; allowed: "
                        f"{', '.join(KINDS)}")
    for field_name in ("levels", "labels"):
        value = getattr(factor, field_name)
        if not isinstance(value, tuple):
            problems.append(f"{where}.{field_name}: {value!r} is not a tuple; allowed: a tuple "
                            f"({field_name[:-1]}, ...)")
    if isinstance(factor.labels, tuple) and not all(isinstance(x, str) for x in factor.labels):
        problems.append(f"{where}.labels: {factor.labels!r} holds a label that is not text; "
                        "allowed: text of letters, digits and . _ +")
    return problems


def _factor_problems(where: str, factor: Factor) -> list[str]:
    """Each problem names its field and what is allowed."""
    problems = _shape_problems(where, factor)
    if problems:
        return problems
    if not _NAME.match(factor.name) or factor.name in RESERVED:
        problems.append(f"{where}.name: name {factor.name!r} is not allowed; allowed: lower case "
                        f"letters, digits and _ (starting with a letter), not one of "
                        f"{', '.join(sorted(RESERVED))}")
    if factor.kind not in KINDS:
        problems.append(f"{where}.kind: unknown kind {factor.kind!r}; allowed: "
                        f"{', '.join(KINDS)}")
        return problems
    if not factor.levels:
        problems.append(f"{where}.levels: no levels; allowed: at least one "
                        f"({ALLOWED_LEVELS[factor.kind]})")
    if factor.labels and len(factor.labels) != len(factor.levels):
        problems.append(f"{where}.labels: {len(factor.labels)} label(s) for "
                        f"{len(factor.levels)} level(s); allowed: one label per level, or none")
    for i, level in enumerate(factor.levels):
        why = _level_problem(factor, level)
        if why is not None:
            problems.append(f"{where}.levels[{i}]: level {level!r} {why}; allowed: "
                            f"{ALLOWED_LEVELS[factor.kind]}")
        elif len(factor.labels) in (0, len(factor.levels)) and \
                not _LABEL.match(label := factor.label_of(i)):
            problems.append(f"{where}.labels[{i}]: label {label!r} of level {level!r} is not "
                            "allowed; allowed: letters, digits and . _ + (give `labels`)")
    labels = [factor.label_of(i) for i in range(len(factor.levels))] \
        if len(factor.labels) in (0, len(factor.levels)) else []
    if len(set(factor.levels)) != len(factor.levels) or len(set(labels)) != len(labels):
        problems.append(f"{where}.levels: levels or labels repeat; allowed: each level once, "
                        "each label once")
    return problems


def check_factors(factors: Sequence[Factor], source: str = "factors") -> tuple[Factor, ...]:
    """The declaration, or UsageProblem listing every problem (`<source>[i].<field>: what;
    allowed: ...`): a wrong type of field, a bad name or kind, empty or
    repeated levels, a level that does not suit its kind, a duplicate factor, two factors of
    one built-in kind (they would set the same thing twice)."""
    problems: list[str] = []
    seen: set[str] = set()
    kinds: set[str] = set()
    for i, factor in enumerate(factors):
        where = f"{source}[{i}]"
        if not isinstance(factor, Factor):
            problems.append(f"{where}: {factor!r} is not a factor; allowed: "
                            "Factor(name, kind, levels)")
            continue
        found = _factor_problems(where, factor)
        problems += found
        if any(p.startswith((f"{where}.name", f"{where}.kind")) for p in found):
            continue
        if factor.name in seen:
            problems.append(f"{where}.name: a factor named {factor.name!r} is declared twice; "
                            "allowed: each name once")
        if factor.kind != "custom" and factor.kind in kinds:
            problems.append(f"{where}.kind: a second {factor.kind!r} factor, one sets it "
                            "already; allowed: one factor of each kind but custom")
        seen.add(factor.name)
        kinds.add(factor.kind)
    if problems:
        # One line, as every refusal: each problem names its field, `|` between them.
        raise UsageProblem(" | ".join(problems))
    return tuple(factors)


def check_runnable(factors: Sequence[Factor]) -> None:
    """Refuse, before anything is written, a factor kind the runner cannot apply yet."""
    pending = [f"{f.name} ({f.kind})" for f in factors if f.kind not in RUNNABLE]
    if pending:
        raise UsageProblem(
            f"factors {', '.join(pending)}: the runner applies only "
            f"{', '.join(sorted(RUNNABLE))} factors")


def check_threads(factors: Sequence[Factor], available: int) -> None:
    """Refuse a threads level above the CPUs this process may use: more threads than CPUs
    measure the scheduler's time slicing, not the machine (a level between the physical
    cores and the CPUs, a hyper-thread study, is allowed)."""
    for factor in factors:
        over = [level for level in factor.levels
                if factor.kind == "threads" and int(level) > available]
        if over:
            raise UsageProblem(
                f"factor {factor.name}: threads level(s) {', '.join(map(str, over))} exceed "
                f"the {available} CPU(s) this process may use; use levels up to {available}")


def largest(factors: Sequence[Factor], kind: str, default: int) -> int:
    """The largest level of the factor of this kind (a whole number), else `default`."""
    for factor in factors:
        if factor.kind == kind:
            return max(int(level) for level in factor.levels)
    return default


def apply_levels(engine: Engine, factors: Sequence[Factor], levels: Levels) -> None:
    """Set up the engine for a run at these levels (a custom factor's level is only
    recorded). Every run of an experiment with a threads factor sets its own count, so no
    run inherits the one before it."""
    kinds = {f.name: f.kind for f in factors}
    for name, level in levels:
        if kinds.get(name) == "threads":
            engine.set_threads(int(level))

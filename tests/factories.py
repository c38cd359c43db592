"""Builders of valid in-memory results files, for any test that needs one.

Every builder returns a schema-valid pydantic object with plain, predictable defaults; pass
keyword overrides for whatever the test is about. Nothing here is a measurement: the files
these build are test inputs only (hostname "test-host"). Their sensors name real backends
(a counter "rapl", a power reading "meter"), since validation blocks any other backend; a test
about that passes `backend=`.

    # tests/ has no __init__.py, so pytest puts tests/ itself on sys.path
    from factories import make_results, make_sensor, campaign_runs, replaced, write_results

    # 1 prompt x 1 strategy x 3 repeats, one chip counter reading 10 W over 1 s windows
    results = make_results()

    # a bigger campaign with a board power sensor; energy chosen per run and sensor
    sensors = [make_sensor("rapl"), make_sensor("board", scope="board", kind="power")]
    results = make_results(
        sensors=sensors, prompts=["a", "b"], strategies=["plain", "draft-4"], repeats=5,
        decode_s=lambda slot: 2.0 if slot.strategy == "plain" else 1.0,
        energy=lambda slot, sensor, window_s: 10.0 * window_s,
    )

    # change one run (the model is re-validated, so the result is still a valid file)
    runs = list(results.runs)
    runs[0] = replaced(runs[0], matches_plain=False, first_divergence=7)
    results = replaced(results, runs=runs)

    path = write_results(results, tmp_path / "r.json")   # the JSON text phase writes

Layout of a generated campaign: runs in the campaign schedule's order without shuffling
(repeat by repeat, prompt by prompt, strategy by strategy) with the schedule's ids
"r<repeat>-<prompt>-<strategy>", one after another on a fixed clock starting at T0; each run
has a 0.1 s prefill, then a decode window of `decode_s` seconds that every sensor's energy
window covers exactly. Default energy: DEFAULT_POWER_W[scope] x window length. Every run is
self-consistent as a plain run is (one target pass per token, nothing drafted) and carries
its strategy's k; `speculate(run, acceptance)` gives it a real speculative trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

from phase.base.errors import UsageProblem
from phase.policy.strategies import parse_strategy
from phase.results import (
    SCHEMA_VERSION,
    CampaignConfig,
    ModelInfo,
    PlainReference,
    PromptSpec,
    Provenance,
    ResultsFile,
    Run,
    SensorInfo,
    SensorTrace,
    SensorWindow,
    Step,
    SummaryFile,
    SummaryRow,
    dump_json,
    token_sha256,
)
from phase.results.schedule import schedule

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a fixed clock keeps generated files reproducible
PREFILL_S = 0.1
GAP_S = 1.0  # idle time between one run's end and the next run's start
DEFAULT_POWER_W = {"chip": 10.0, "module": 12.0, "board": 15.0, "wall": 20.0}
NGRAM_K = 4  # make_config's ngram_k: what a bare "ngram" strategy proposes at most

M = TypeVar("M", bound=BaseModel)


class RunSlot(NamedTuple):
    """Which run of a generated campaign a callback is asked about."""

    prompt: str
    strategy: str
    repeat: int
    order: int


EnergyFn = Callable[[RunSlot, SensorInfo, float], "float | None"]


def replaced(model: M, **changes: Any) -> M:
    """A copy of `model` with fields changed, validated again (so it stays a valid file): the
    changed fields and the model's own checks; the unchanged fields are the model's already
    validated parts, taken as they are (a whole results file dumped and validated again, for
    every run changed, was most of what an adversarial case cost)."""
    return type(model).model_validate({**dict(model), **changes})


def write_results(model: ResultsFile | SummaryFile, path: Path | str) -> Path:
    """Write exactly the JSON text phase itself writes; returns the path."""
    p = Path(path)
    p.write_text(dump_json(model), encoding="utf-8")
    return p


def make_provenance(**overrides: Any) -> Provenance:
    fields: dict[str, Any] = {
        "phase_version": "0.1.0",
        "git_commit": None,
        "git_dirty": None,
        "llama_cpp_python_version": None,
        "llama_cpp_system_info": None,
        "python_version": "3.11.7",
        "os": "Linux",
        "hostname": "test-host",
        "host_class": "test",
        "cpu_model": None,
        "cpu_cores": 2,
        "ram_bytes": None,
        "gpus": [],
        "threads": 2,
        "threads_batch": 2,
        "command_line": ["phase", "measure", "test"],
    }
    fields.update(overrides)
    return Provenance(**fields)


def make_model(role: str = "target", **overrides: Any) -> ModelInfo:
    fields: dict[str, Any] = {
        "role": role,
        "name": f"test-{role}",
        "source": "fixture",
        "path": f"/nonexistent/{role}.gguf",
        "size_bytes": 1,
        "sha256": "0" * 64,
        "architecture": "llama",
        "quant": "Q4_1",
        "n_vocab": 49152,
    }
    fields.update(overrides)
    return ModelInfo(**fields)


def make_sensor(
    name: str = "chip",
    *,
    scope: str = "chip",
    kind: str = "counter",
    smoothing_s: float = 0.0,
    max_power_w: float | None = None,
    **overrides: Any,
) -> SensorInfo:
    """A declared sensor; the unit follows the kind (counter J, power W)."""
    fields: dict[str, Any] = {
        "name": name,
        "backend": "rapl" if kind == "counter" else "meter",
        "scope": scope,
        "kind": kind,
        "unit": "J" if kind == "counter" else "W",
        "smoothing_s": smoothing_s,
        "max_power_w": max_power_w,
        # A counter updates about every millisecond (RAPL), a power reading every 0.1 s.
        "update_period_s": 0.001 if kind == "counter" else 0.1,
    }
    fields.update(overrides)
    return SensorInfo(**fields)


def make_window(
    sensor: str = "chip",
    *,
    start_unix_s: float = T0,
    window_s: float = 1.0,
    energy_j: float | None = 10.0,
    **overrides: Any,
) -> SensorWindow:
    """One sensor's decode window; mean power follows from energy unless overridden.

    `energy_j=None` gives an unmeasured window with a reason, as the schema requires.
    """
    fields: dict[str, Any] = {
        "sensor": sensor,
        "start_unix_s": start_unix_s,
        "end_unix_s": start_unix_s + window_s,
        "energy_j": energy_j,
        "energy_reason": None if energy_j is not None else "fixture: not measured",
        "mean_power_w": energy_j / window_s if energy_j is not None and window_s > 0 else None,
        "idle_power_w": 2.0,
        "samples": 10,
        "gaps": 0,
    }
    fields.update(overrides)
    return SensorWindow(**fields)


def make_trace(sensor: str, values: Sequence[float], *, dt_s: float = 0.1) -> SensorTrace:
    """Raw samples at a fixed period, starting at t = 0 (the run's idle window start)."""
    return SensorTrace(sensor=sensor, t_s=[i * dt_s for i in range(len(values))], values=values)


def fixture_token_ids(tokens: int) -> list[int]:
    """The token ids every generated run (and plain reference) decodes to."""
    return [(7 * i + 3) % 49152 for i in range(tokens)]


def _digest(token_ids: Sequence[int]) -> str:
    return hashlib.sha256(",".join(map(str, token_ids)).encode()).hexdigest()


def strategy_k(strategy: str) -> int | None:
    """The k a run of this strategy records (None for plain or a name phase cannot parse)."""
    try:
        return parse_strategy(strategy, ngram_k=NGRAM_K).k
    except UsageProblem:
        return None


def plain_trace(tokens: int, decode_s: float) -> list[Step]:
    """One target pass per token, nothing proposed: the trace of a plain run."""
    ms = decode_s * 1e3 / tokens
    return [Step(proposed=0, accepted=0, propose_ms=0.0, verify_ms=ms) for _ in range(tokens)]


def speculate(run: Run, acceptance: float) -> Run:
    """The run with the trace a speculative decoder keeping about `acceptance` of its
    proposals would record: each step proposes min(k, tokens left - 1), as the engine does,
    and accepts its share (rounded so the running total tracks the rate)."""
    k = run.k
    if k is None:
        raise ValueError(f"{run.strategy} has no k to speculate with")
    steps: list[Step] = []
    left, drafted, accepted = run.tokens, 0, 0
    while left > 0:
        proposed = min(k, left - 1)
        drafted += proposed
        kept = min(proposed, max(0, int(drafted * acceptance + 1e-9) - accepted))
        accepted += kept
        left -= kept + 1
        steps.append(Step(proposed=proposed, accepted=kept, propose_ms=1.0, verify_ms=2.0))
    return replaced(
        run, trace=steps, steps=len(steps), drafted=drafted, accepted=accepted,
        acceptance=accepted / drafted if drafted else None,
        acceptance_reason=None if drafted else "fixture: nothing proposed",
    )


def diverge(run: Run, at: int, *, gap_verify: float | None = None,
            gap_reference: float | None = None) -> Run:
    """The run with its output changed from token `at` on, recorded as diverging there."""
    ids = list(run.token_ids)
    ids[at:] = [(t + 1) % 49152 for t in ids[at:]]
    return replaced(
        run, token_ids=ids, output_sha256=token_sha256(ids), matches_plain=False,
        first_divergence=at, divergence_gap_verify=gap_verify,
        divergence_gap_reference=gap_reference,
    )


def make_reference(prompt: str = "p1", tokens: int = 16) -> PlainReference:
    """The plain-decoding reference for a prompt, matching what make_run decodes."""
    ids = fixture_token_ids(tokens)
    return PlainReference(prompt=prompt, output_sha256=_digest(ids), token_ids=ids)


def make_run(
    *,
    prompt: str = "p1",
    strategy: str = "plain",
    repeat: int = 0,
    order: int | None = None,
    tokens: int = 16,
    decode_s: float = 1.0,
    started_unix_s: float = T0,
    energy: Iterable[SensorWindow] = (),
    samples: Iterable[SensorTrace] = (),
    **overrides: Any,
) -> Run:
    """One run, consistent in itself, whose output matches plain (see `diverge`). `order`
    defaults to `repeat`: the schedule's order when a campaign has one prompt and strategy."""
    token_ids = fixture_token_ids(tokens)
    digest = _digest(token_ids)
    fields: dict[str, Any] = {
        "id": f"r{repeat}-{prompt}-{strategy}",
        "repeat": repeat,
        "order": repeat if order is None else order,
        "prompt": prompt,
        "strategy": strategy,
        "k": strategy_k(strategy),
        "started_unix_s": started_unix_s,
        "ended_unix_s": started_unix_s + PREFILL_S + decode_s,
        "prompt_tokens": 12,
        "prefill_s": PREFILL_S,
        "decode_s": decode_s,
        "tokens": tokens,
        "tokens_per_s": tokens / decode_s,
        "steps": tokens,
        "drafted": 0,
        "accepted": 0,
        "acceptance": None,
        "acceptance_reason": "fixture: nothing drafted",
        "trace": plain_trace(tokens, decode_s),
        "cpu_s": decode_s,
        "energy": list(energy),
        "temperatures_c": {},
        "output_sha256": digest,
        "output_text": "fixture output",
        "token_ids": token_ids,
        "matches_plain": True,
        "first_divergence": None,
        "samples": list(samples),
    }
    fields.update(overrides)
    return Run(**fields)


def campaign_runs(
    sensors: Sequence[SensorInfo] = (),
    *,
    prompts: Sequence[str] = ("p1",),
    strategies: Sequence[str] = ("plain",),
    repeats: int = 3,
    tokens: int = 16,
    decode_s: float | Callable[[RunSlot], float] = 1.0,
    energy: EnergyFn | None = None,
) -> list[Run]:
    """Every prompt x strategy x repeat, with one energy window per sensor per run.

    `decode_s` may be a number or a function of the RunSlot; `energy(slot, sensor, window_s)`
    returns that sensor's joules for the run (None: not measured).
    """
    runs: list[Run] = []
    clock = T0
    for planned in schedule(prompts, strategies, repeats, seed=0, shuffle=False):
        slot = RunSlot(planned.prompt, planned.strategy, planned.repeat, planned.order)
        window = decode_s(slot) if callable(decode_s) else decode_s
        start = clock + PREFILL_S
        windows = [
            make_window(
                s.name,
                start_unix_s=start,
                window_s=window,
                energy_j=(
                    energy(slot, s, window)
                    if energy is not None
                    else DEFAULT_POWER_W[s.scope] * window
                ),
            )
            for s in sensors
        ]
        runs.append(
            make_run(
                prompt=slot.prompt,
                strategy=slot.strategy,
                repeat=slot.repeat,
                order=slot.order,
                tokens=tokens,
                decode_s=window,
                started_unix_s=clock,
                energy=windows,
            )
        )
        clock += PREFILL_S + window + GAP_S
    return runs


def make_config(
    *,
    prompts: Sequence[str] = ("p1",),
    strategies: Sequence[str] = ("plain",),
    repeats: int = 3,
    tokens: int = 16,
    **overrides: Any,
) -> CampaignConfig:
    fields: dict[str, Any] = {
        "tokens": tokens,
        "repeats": repeats,
        "seed": 0,
        "shuffle": False,
        "strategies": list(strategies),
        "prompts": [PromptSpec(name=p, text=f"fixture prompt {p}") for p in prompts],
        "n_ctx": 512,
        "cooldown_s": 0.0,
        "idle_window_s": 0.5,
        "sample_hz": 10.0,
        "chat_template": True,
        "ngram_n_min": 1,
        "ngram_n_max": 3,
        "ngram_k": NGRAM_K,
    }
    fields.update(overrides)
    return CampaignConfig(**fields)


def make_results(
    runs: Sequence[Run] | None = None,
    *,
    sensors: Sequence[SensorInfo] | None = None,
    prompts: Sequence[str] = ("p1",),
    strategies: Sequence[str] = ("plain",),
    repeats: int = 3,
    tokens: int = 16,
    decode_s: float | Callable[[RunSlot], float] = 1.0,
    energy: EnergyFn | None = None,
    **overrides: Any,
) -> ResultsFile:
    """A complete raw results file. Without `runs`, the full campaign is generated by
    `campaign_runs` from the same arguments; `sensors` defaults to one chip counter "chip"
    (pass `[]` for a machine with no sensors)."""
    sensors = [make_sensor()] if sensors is None else list(sensors)
    if runs is None:
        runs = campaign_runs(
            sensors,
            prompts=prompts,
            strategies=strategies,
            repeats=repeats,
            tokens=tokens,
            decode_s=decode_s,
            energy=energy,
        )
    fields: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": "fixture-campaign",
        "experiment": "fixture",
        "note": None,
        "created": datetime(2026, 1, 1, tzinfo=UTC),
        "status": "complete",
        "provenance": make_provenance(),
        "models": [make_model()],
        "sensors": sensors,
        "sensors_unavailable": [],
        "config": make_config(
            prompts=prompts, strategies=strategies, repeats=repeats, tokens=tokens
        ),
        "references": [make_reference(p, tokens) for p in prompts],
        "runs": list(runs),
    }
    fields.update(overrides)
    return ResultsFile(**fields)


def make_summary_row(prompt: str = "p1", strategy: str = "plain", **overrides: Any) -> SummaryRow:
    fields: dict[str, Any] = {
        "prompt": prompt,
        "strategy": strategy,
        "k": strategy_k(strategy),
        "n": 3,
        "tokens_per_s": 20.0,
        "acceptance": None,
        "chip_mj_per_token": 500.0,
        "energy_ratio_vs_plain": 1.0,
    }
    fields.update(overrides)
    return SummaryRow(**fields)


def make_summary(rows: Sequence[SummaryRow] | None = None, **overrides: Any) -> SummaryFile:
    """A summary file; rows default to one plain row for prompt p1."""
    fields: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": "fixture-summary",
        "experiment": "fixture",
        "note": None,
        "summary_only": True,
        "source": "fixture",
        "raw_files": [],
        "rows": list(rows) if rows is not None else [make_summary_row()],
    }
    fields.update(overrides)
    return SummaryFile(**fields)


def shifted(model: M, seconds: float) -> M:
    """`model` with every Unix timestamp it holds (`*_unix_s`) moved by `seconds`: a file made
    from another one's runs at another date still has its runs after its `created`."""

    def move(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (v + seconds if k.endswith("_unix_s") and isinstance(v, int | float)
                        else move(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [move(v) for v in node]
        return node

    return type(model).model_validate(move(model.model_dump(mode="json")))

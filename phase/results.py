"""The results contract: what `phase measure` writes and everything downstream reads.

One file per campaign. Raw files (`results/<id>.json`) are written run by run while a
campaign is in progress and never touched again once `status` is `complete`. Summary files
(`results/summary-*.json`) hold per-condition figures, either derived from raw files or
transcribed from a published source and marked so.

Conventions: units live in field names (`_s`, `_j`, `_w`, `_bytes`); floats reject NaN and
infinity; a measurement that could not be taken is `null` next to a `*_reason` string saying
why, never 0.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from phase.errors import PhaseError

# Schema history (bump SCHEMA_VERSION and add a migration below when the shape changes):
#   1 (2026-11): first version.
SCHEMA_VERSION = 1

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Scope = Literal["chip", "board", "module", "wall"]
SensorKind = Literal["counter", "power"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)


def _paired(value: Any, reason: str | None, name: str) -> None:
    """A measurement is either present or absent with a reason, never both, never neither."""
    if value is None and not reason:
        raise ValueError(f"{name} is null, so {name}_reason must say why")
    if value is not None and reason:
        raise ValueError(f"{name} has a value, so {name}_reason must be null")


# --- identity and provenance -------------------------------------------------------------


class Provenance(Strict):
    phase_version: str
    git_commit: str | None
    git_dirty: bool | None
    llama_cpp_python_version: str | None
    llama_cpp_system_info: str | None
    python_version: str
    os: str
    hostname: str
    host_class: str
    cpu_model: str | None
    cpu_cores: PosInt
    ram_bytes: NonNegInt | None
    gpus: list[str]
    threads: PosInt
    threads_batch: PosInt
    command_line: list[str]


class ModelInfo(Strict):
    role: Literal["target", "draft"]
    name: str
    source: str
    path: str
    size_bytes: PosInt
    sha256: Sha256
    architecture: str | None
    quant: str | None
    n_vocab: PosInt


class SensorInfo(Strict):
    name: str
    backend: str
    scope: Scope
    kind: SensorKind
    unit: Literal["J", "W"]
    smoothing_s: NonNegFloat
    max_power_w: NonNegFloat | None
    update_period_s: NonNegFloat | None
    update_period_reason: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SensorInfo:
        _paired(self.update_period_s, self.update_period_reason, "update_period")
        expected = "J" if self.kind == "counter" else "W"
        if self.unit != expected:
            raise ValueError(f"a {self.kind} sensor reports in {expected}, not {self.unit}")
        return self


class UnavailableBackend(Strict):
    backend: str
    reason: str


class PromptSpec(Strict):
    name: str
    text: str
    source: str | None = None


class CampaignConfig(Strict):
    tokens: PosInt
    repeats: PosInt
    seed: int
    shuffle: bool
    strategies: list[str] = Field(min_length=1)
    prompts: list[PromptSpec] = Field(min_length=1)
    n_ctx: PosInt
    cooldown_s: NonNegFloat
    idle_window_s: NonNegFloat
    sample_hz: NonNegFloat
    chat_template: bool
    ngram_n_min: PosInt
    ngram_n_max: PosInt
    ngram_k: PosInt


# --- per run -------------------------------------------------------------------------------


class Step(Strict):
    proposed: NonNegInt
    accepted: NonNegInt
    draft_ms: NonNegFloat
    verify_ms: NonNegFloat

    @model_validator(mode="after")
    def _check(self) -> Step:
        if self.accepted > self.proposed:
            raise ValueError(f"accepted ({self.accepted}) exceeds proposed ({self.proposed})")
        return self


class SensorWindow(Strict):
    """One sensor over one run's decode window (and the idle window just before it)."""

    sensor: str
    start_unix_s: FiniteFloat
    end_unix_s: FiniteFloat
    energy_j: FiniteFloat | None
    energy_reason: str | None = None
    mean_power_w: FiniteFloat | None
    idle_power_w: FiniteFloat | None
    idle_power_reason: str | None = None
    samples: NonNegInt
    gaps: NonNegInt

    @model_validator(mode="after")
    def _check(self) -> SensorWindow:
        _paired(self.energy_j, self.energy_reason, "energy")
        _paired(self.idle_power_w, self.idle_power_reason, "idle_power")
        if self.end_unix_s < self.start_unix_s:
            raise ValueError("window ends before it starts")
        return self


class SensorTrace(Strict):
    """Raw timestamped samples; `t_s` is seconds since the run's idle window began."""

    sensor: str
    t_s: list[FiniteFloat]
    value: list[FiniteFloat]

    @model_validator(mode="after")
    def _check(self) -> SensorTrace:
        if len(self.t_s) != len(self.value):
            raise ValueError(f"t_s has {len(self.t_s)} entries but value has {len(self.value)}")
        return self


class Run(Strict):
    id: str
    repeat: NonNegInt
    order: NonNegInt
    prompt: str
    strategy: str
    k: PosInt | None
    started_unix_s: FiniteFloat
    ended_unix_s: FiniteFloat
    prompt_tokens: PosInt
    prefill_s: NonNegFloat
    decode_s: NonNegFloat
    tokens: PosInt
    tokens_per_s: NonNegFloat
    steps: NonNegInt
    drafted: NonNegInt
    accepted: NonNegInt
    acceptance: Fraction | None
    acceptance_reason: str | None = None
    trace: list[Step]
    cpu_s: NonNegFloat
    energy: list[SensorWindow]
    temperatures_c: dict[str, FiniteFloat]
    output_sha256: Sha256
    output_text: str
    token_ids: list[NonNegInt]
    matches_plain: bool | None
    matches_plain_reason: str | None = None
    first_divergence: NonNegInt | None = None
    samples: list[SensorTrace]

    @model_validator(mode="after")
    def _check(self) -> Run:
        _paired(self.acceptance, self.acceptance_reason, "acceptance")
        _paired(self.matches_plain, self.matches_plain_reason, "matches_plain")
        if self.accepted > self.drafted:
            raise ValueError(f"accepted ({self.accepted}) exceeds drafted ({self.drafted})")
        if len(self.token_ids) != self.tokens:
            raise ValueError(f"tokens is {self.tokens} but token_ids has {len(self.token_ids)}")
        if self.matches_plain is False and self.first_divergence is None:
            raise ValueError("matches_plain is false, so first_divergence must be given")
        return self


class PlainReference(Strict):
    """Plain decoding of one prompt, generated before the measured runs (also a warm-up).

    Every run's `matches_plain` compares its tokens with this reference, so the check does
    not depend on where the measured plain runs fell in the shuffled order.
    """

    prompt: str
    output_sha256: Sha256
    token_ids: list[NonNegInt]


class ResultsFile(Strict):
    schema_version: Literal[1]
    kind: Literal["raw"] = "raw"
    id: str
    experiment: str
    note: str | None
    created: datetime
    status: Literal["running", "complete", "interrupted"]
    provenance: Provenance
    models: list[ModelInfo]
    sensors: list[SensorInfo]
    sensors_unavailable: list[UnavailableBackend]
    config: CampaignConfig
    references: list[PlainReference]
    runs: list[Run]


# --- summaries (what tables read) ---------------------------------------------------------


class SummaryRow(Strict):
    prompt: str
    strategy: str
    k: PosInt | None
    n: PosInt | None
    tokens_per_s: NonNegFloat | None
    tokens_per_s_spread: NonNegFloat | None = None
    acceptance: Fraction | None
    chip_mj_per_token: NonNegFloat | None
    chip_mj_per_token_reason: str | None = None
    chip_energy_spread: NonNegFloat | None = None
    ratio_vs_plain: NonNegFloat | None
    run_ids: list[str] = Field(default_factory=list)
    # Optional extras (schema 1 files without them stay valid): why acceptance is missing
    # where a strategy speculates, process CPU time, and the enclosing (board) sensor's energy,
    # given only where it passed validation.
    acceptance_reason: str | None = None
    cpu_ms_per_token: NonNegFloat | None = None
    board_mj_per_token: NonNegFloat | None = None
    board_mj_per_token_reason: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SummaryRow:
        _paired(self.chip_mj_per_token, self.chip_mj_per_token_reason, "chip_mj_per_token")
        if self.board_mj_per_token is not None and self.board_mj_per_token_reason:
            raise ValueError("board_mj_per_token has a value, so its reason must be null")
        return self


class SummaryFile(Strict):
    schema_version: Literal[1]
    kind: Literal["summary"] = "summary"
    id: str
    experiment: str
    note: str | None
    summary_only: bool
    source: str
    raw_files: list[str]
    raw_runs_note: str | None = None
    machine: str | None = None
    # Which declared sensors the chip and board figures come from (derived summaries only).
    chip_sensor: str | None = None
    board_sensor: str | None = None
    rows: list[SummaryRow] = Field(min_length=1)


# --- loading and writing ------------------------------------------------------------------


class ResultsError(PhaseError):
    """A results file could not be read; the message names file, JSON path and problem."""


# Migrations take the raw dict of version N and return version N+1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def migrate(data: dict[str, Any], path: Path | str = "<data>") -> dict[str, Any]:
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ResultsError(f"{path}: $.schema_version: missing or not an integer")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{path}: $.schema_version: {version} is newer than this phase understands "
            f"({SCHEMA_VERSION}); upgrade phase"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ResultsError(f"{path}: $.schema_version: no migration from version {version}")
        data = step(data)
        version = data["schema_version"]
    return data


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def parse(data: Any, path: Path | str = "<data>") -> ResultsFile | SummaryFile:
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: $: expected a JSON object, found {type(data).__name__}")
    data = migrate(data, path)
    model: type[ResultsFile] | type[SummaryFile] = (
        SummaryFile if data.get("kind") == "summary" else ResultsFile
    )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        loc = tuple(p for p in first["loc"] if not str(p).startswith("function-after"))
        raise ResultsError(f"{path}: {_json_path(loc)}: {first['msg']}{more}") from None


def load(path: Path | str) -> ResultsFile | SummaryFile:
    """Read and validate a results file; every failure is one ResultsError line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such file") from None
    except OSError as exc:
        raise ResultsError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"{p}: $: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            " (truncated or hand-edited?)"
        ) from None
    except ValueError as exc:
        raise ResultsError(f"{p}: $: {exc}") from None
    return parse(data, p)


def load_raw(path: Path | str) -> ResultsFile:
    result = load(path)
    if not isinstance(result, ResultsFile):
        raise ResultsError(f"{path}: $.kind: this is a summary file; a raw results file is needed")
    return result


def dump_json(model: BaseModel) -> str:
    return model.model_dump_json(indent=1) + "\n"


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write via a temp file in the same directory, fsync, then rename over the target.

    A reader (or a crash) sees either the old complete file or the new complete file.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        # mkstemp creates 0600; results are meant to be shared, so honour the umask instead.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(p.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class CampaignWriter:
    """Persists a campaign after each finished run; refuses to touch a completed file."""

    def __init__(self, path: Path | str, results: ResultsFile) -> None:
        self.path = Path(path)
        self.results = results
        if results.status == "complete":
            raise ResultsError(f"{self.path}: campaign is complete; results files are immutable")
        self._flush()

    @classmethod
    def resume(cls, path: Path | str) -> CampaignWriter:
        results = load_raw(path)
        if results.status == "complete":
            raise ResultsError(f"{path}: campaign already complete; nothing to resume")
        results.status = "running"
        return cls(path, results)

    def _flush(self) -> None:
        atomic_write_text(self.path, dump_json(self.results))

    def add_run(self, run: Run) -> None:
        if any(r.id == run.id for r in self.results.runs):
            raise ResultsError(f"{self.path}: run {run.id} is already recorded")
        self.results.runs.append(run)
        self._flush()

    def finish(self, status: Literal["complete", "interrupted"] = "complete") -> None:
        self.results.status = status
        self._flush()


def json_schema() -> dict[str, Any]:
    """The JSON Schema committed at results/schema.json (one document for both kinds)."""
    raw = ResultsFile.model_json_schema()
    summary = SummaryFile.model_json_schema()
    defs = {**raw.pop("$defs", {}), **summary.pop("$defs", {})}
    defs["ResultsFile"] = raw
    defs["SummaryFile"] = summary
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "phase results file",
        "description": f"phase results schema version {SCHEMA_VERSION}",
        "oneOf": [{"$ref": "#/$defs/ResultsFile"}, {"$ref": "#/$defs/SummaryFile"}],
        "$defs": defs,
    }


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=1, sort_keys=True) + "\n"

"""The results contract: what `phase measure` writes and everything downstream reads.

    schema      the pydantic models (strict), SCHEMA_VERSION, token_sha256
    config      what a campaign was asked to do (CampaignConfig, PromptSpec)
    covers      what a chip energy figure covers (PrimaryEnergy, the parts, per backend)
    confirmation what a confirmation campaign confirms (Confirms: the selection and its rule)
    costs       the cost profile a campaign measures before its runs (CostProfile)
    hosts       host identities, shards, merged shards (ResultsFile.hosts / shard / merged_from)
    base        what every model shares (Strict, constrained numbers, paired value/reason)
    migrations  older files read as the current schema (MIGRATIONS, migrate)
    jsonread    strict JSON reading: regular UTF-8 files, no duplicate keys, bounded nesting
    io          load / parse (strict) / dump, the JSON Schema
    claim       one writer per file: the lock a campaign holds, default names chosen atomically
    writing     exclusive creation, atomic replacement, the run-by-run CampaignWriter
    outputs     every file or directory phase creates: claimed first, created exclusively
    llama_build what llama.cpp's system-info string says: the build's accelerator, features
"""

from phase.results.adaptive import (
    AdaptiveCondition,
    AdaptiveRecord,
    AdaptiveRound,
    RatioInterval,
)
from phase.results.config import CampaignConfig, FactorSpec, Level, PromptSpec, SamplingConfig
from phase.results.confirmation import Confirms
from phase.results.costs import CostProfile, PassCost, ProfilePoint
from phase.results.covers import PARTS, covers_of, covers_words, sensor_covers
from phase.results.hosts import HostIdentity, HostInfo, MergedShard, ShardInfo
from phase.results.io import (
    dump_json,
    json_schema,
    json_schema_text,
    load,
    load_raw,
    parse,
)
from phase.results.memory import BandwidthMeasurement, BytesEstimate, VariantInfo
from phase.results.migrations import MIGRATIONS, ResultsError, migrate
from phase.results.schema import (
    FiniteFloat,
    ModelInfo,
    Pass,
    PlainReference,
    PrimaryEnergy,
    Provenance,
    ResultsFile,
    Run,
    Scope,
    SensorInfo,
    SensorKind,
    SensorTrace,
    SensorWindow,
    Step,
    Strict,
    UnavailableBackend,
    token_sha256,
)
from phase.results.summary import FigureInterval, SummaryFile, SummaryRow
from phase.results.version import SCHEMA_VERSION
from phase.storage.claim import (
    Claim,
    FileBusy,
    Holder,
    claim_existing,
    claim_new,
    claim_new_results,
    claim_numbered,
)
from phase.storage.writing import (
    CampaignWriter,
    WriteFailed,
    atomic_write_text,
    create_exclusive,
)

__all__ = [
    "MIGRATIONS",
    "PARTS",
    "SCHEMA_VERSION",
    "AdaptiveCondition",
    "AdaptiveRecord",
    "AdaptiveRound",
    "BandwidthMeasurement",
    "BytesEstimate",
    "CampaignConfig",
    "CampaignWriter",
    "Claim",
    "Confirms",
    "CostProfile",
    "FactorSpec",
    "FigureInterval",
    "FileBusy",
    "FiniteFloat",
    "Holder",
    "HostIdentity",
    "HostInfo",
    "Level",
    "MergedShard",
    "ModelInfo",
    "Pass",
    "PassCost",
    "PlainReference",
    "PrimaryEnergy",
    "ProfilePoint",
    "PromptSpec",
    "Provenance",
    "RatioInterval",
    "ResultsError",
    "ResultsFile",
    "Run",
    "SamplingConfig",
    "Scope",
    "SensorInfo",
    "SensorKind",
    "SensorTrace",
    "SensorWindow",
    "ShardInfo",
    "Step",
    "Strict",
    "SummaryFile",
    "SummaryRow",
    "UnavailableBackend",
    "VariantInfo",
    "WriteFailed",
    "atomic_write_text",
    "claim_existing",
    "claim_new",
    "claim_new_results",
    "claim_numbered",
    "covers_of",
    "covers_words",
    "create_exclusive",
    "dump_json",
    "json_schema",
    "json_schema_text",
    "load",
    "load_raw",
    "migrate",
    "parse",
    "sensor_covers",
    "token_sha256",
]

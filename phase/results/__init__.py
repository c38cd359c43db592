"""The results contract: what `phase measure` writes and everything downstream reads.

    schema      the pydantic models (strict), SCHEMA_VERSION, token_sha256
    hosts       host identities, shards, merged shards (ResultsFile.hosts / shard / merged_from)
    base        Strict and the constrained number types every model uses
    migrations  older files read as the current schema (MIGRATIONS, migrate)
    io          load / parse / dump, atomic writes, the run-by-run CampaignWriter, JSON Schema
"""

from phase.results.hosts import HostIdentity, HostInfo, MergedShard, ShardInfo
from phase.results.io import (
    CampaignWriter,
    atomic_write_text,
    dump_json,
    json_schema,
    json_schema_text,
    load,
    load_raw,
    parse,
)
from phase.results.migrations import MIGRATIONS, ResultsError, migrate
from phase.results.schema import (
    SCHEMA_VERSION,
    CampaignConfig,
    FiniteFloat,
    ModelInfo,
    PlainReference,
    PrimaryEnergy,
    PromptSpec,
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
    SummaryFile,
    SummaryRow,
    UnavailableBackend,
    token_sha256,
)

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CampaignConfig",
    "CampaignWriter",
    "FiniteFloat",
    "HostIdentity",
    "HostInfo",
    "MergedShard",
    "ModelInfo",
    "PlainReference",
    "PrimaryEnergy",
    "PromptSpec",
    "Provenance",
    "ResultsError",
    "ResultsFile",
    "Run",
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
    "atomic_write_text",
    "dump_json",
    "json_schema",
    "json_schema_text",
    "load",
    "load_raw",
    "migrate",
    "parse",
    "token_sha256",
]

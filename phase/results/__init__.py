"""The results contract: what `phase measure` writes and everything downstream reads.

    schema      the pydantic models (strict), SCHEMA_VERSION, token_sha256
    config      what a campaign was asked to do (CampaignConfig, PromptSpec)
    covers      what a chip energy figure covers (PrimaryEnergy, the parts, per backend)
    confirmation what a confirmation campaign confirms (Confirms: the selection and its rule)
    costs       the cost profile a campaign measures before its runs (CostProfile)
    duration    the time a campaign stated before its runs (StatedDuration)
    hosts       host identities, shards, merged shards (ResultsFile.hosts / shard / merged_from)
    base        what every model shares (Strict, constrained numbers, paired value/reason)
    migrations  older files read as the current schema (MIGRATIONS, migrate)
    io          load / parse (strict) / dump, the JSON Schema
    names       no control characters in what a results file names
    writer      the run-by-run CampaignWriter, and the claim on a new results file
    llama_build what llama.cpp's system-info string says: the build's accelerator, features
    host_labels a file's host class, full host identity and one-line machine description

Reading and writing files as such (strict JSON, locks, atomic writes, confined paths) is
phase.storage's, which knows nothing of this schema.
"""

from phase.results.adaptive import (
    AdaptiveCondition,
    AdaptiveRecord,
    AdaptiveRound,
    RatioInterval,
)
from phase.results.config import (
    CampaignConfig,
    FactorSpec,
    Level,
    PromptSpec,
    SamplingConfig,
    WorkloadRecord,
)
from phase.results.confirmation import Confirms
from phase.results.costs import CostProfile, PassCost, ProfilePoint
from phase.results.covers import PARTS, covers_of, covers_words, sensor_covers
from phase.results.duration import StatedDuration
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
from phase.results.verification import Verification
from phase.results.version import SCHEMA_VERSION
from phase.results.writer import CampaignWriter, claim_new_results

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
    "Confirms",
    "CostProfile",
    "FactorSpec",
    "FigureInterval",
    "FiniteFloat",
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
    "StatedDuration",
    "Step",
    "Strict",
    "SummaryFile",
    "SummaryRow",
    "UnavailableBackend",
    "VariantInfo",
    "Verification",
    "WorkloadRecord",
    "claim_new_results",
    "covers_of",
    "covers_words",
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

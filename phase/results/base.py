"""The building blocks every results model shares: strict models, constrained numbers, and
the rule that a missing measurement comes with a reason.

They live apart from `schema` so that the cost-profile models (`costs`) and the file models
that hold them can both use them without importing each other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from phase.storage.safepath import FILE_NAME_PATTERN

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# A file's bare name (a shard, a raw file a summary came from): never a path, so never one
# that leads anywhere else when joined to a directory (phase.storage.safepath).
FileName = Annotated[str, Field(pattern=FILE_NAME_PATTERN, max_length=255)]
Scope = Literal["chip", "board", "module", "wall"]
SensorKind = Literal["counter", "power"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)


def paired(value: Any, reason: str | None, name: str) -> None:
    """A measurement is either present or absent with a reason, never both, never neither."""
    if value is None and not reason:
        raise ValueError(f"{name} is null, so {name}_reason must say why")
    if value is not None and reason:
        raise ValueError(f"{name} has a value, so {name}_reason must be null")

"""Every setting of a plan checked against its declared range before anything is written.

`CampaignPlan`'s fields carry their ranges as annotations (`PosInt`, `NonNegFloat`, a
Literal...). pydantic validates the plan's values against them, strictly (no "3" for 3, no
1.5 or True for a whole number), and its first problem becomes one line naming the field, what
is wrong and what is allowed, the allowed part read from the same annotation (its JSON schema),
so every field is covered by the class, not by a list of messages kept beside it. The factors
have their own checks (phase.campaign.factors: a level's range depends on its factor's kind).
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from phase.base.errors import UsageProblem
from phase.campaign.plan import CampaignPlan


@cache
def _model() -> type[BaseModel]:
    hints = get_type_hints(CampaignPlan, include_extras=True)
    # Factors are checked by phase.campaign.factors, whose messages know each kind's levels.
    hints["factors"] = tuple[Any, ...]
    return create_model("CampaignPlan",  # type: ignore[call-overload]
                        __config__=ConfigDict(strict=True, extra="forbid"),
                        **{name: (hint, ...) for name, hint in hints.items()})


def check_plan(plan: CampaignPlan, where: str = "plan") -> None:
    """UsageProblem `<where>.<field>: <value> <what is wrong>; allowed: <range>` for the first
    field out of its range; nothing when every field is in range."""
    values = {f.name: getattr(plan, f.name) for f in fields(plan)}
    try:
        _model().model_validate(values)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise UsageProblem(f"{where}.{_path(first['loc'])}: {first['input']!r}: "
                           f"{_lower(first['msg'])}; allowed: {allowed(str(first['loc'][0]))}"
                           ) from None


# What pydantic puts in an error's place when it names the union member it tried, not a field.
_MEMBER_TAGS = frozenset({"int", "float", "str", "bool", "none", "tuple", "list", "dict"})


def _path(loc: tuple[int | str, ...]) -> str:
    out = str(loc[0])
    for part in loc[1:]:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in _MEMBER_TAGS and part[:1].islower() and part.isidentifier():
            out += f".{part}"
    return out


def _lower(message: str) -> str:
    return message[:1].lower() + message[1:]


def allowed(name: str) -> str:
    """What a field allows, in words, from its annotation's JSON schema."""
    schema = _model().model_json_schema()
    return describe(schema["properties"][name], schema.get("$defs", {}))


def describe(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON schema in words: 'a whole number >= 1 or None', "'time' or 'energy'"."""
    if "$ref" in schema:
        return f"a {schema['$ref'].rsplit('/', 1)[-1]}"
    if "anyOf" in schema:
        return " or ".join(describe(s, defs) for s in schema["anyOf"])
    if "enum" in schema or "const" in schema:
        return " or ".join(repr(v) for v in schema.get("enum", [schema.get("const")]))
    kind = schema.get("type")
    words = {"integer": "a whole number", "number": "a finite number", "boolean": "True or False",
             "null": "None", "string": "text", "array": "a tuple"}.get(str(kind), str(kind))
    if kind == "string" and schema.get("minLength"):
        words = "non-empty text"
    if kind == "array":
        items = schema.get("items")
        words += f" of {describe(items, defs)}" if isinstance(items, dict) and items else ""
        if schema.get("minItems"):
            words += f", at least {schema['minItems']}"
    bounds = [f"{sign} {schema[key]:g}" for key, sign in
              (("exclusiveMinimum", ">"), ("minimum", ">="), ("exclusiveMaximum", "<"),
               ("maximum", "<=")) if key in schema]
    return " ".join([words, " and ".join(bounds)]) if bounds else words

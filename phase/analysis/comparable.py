"""Whether two campaigns' numbers compare: what each results file says about the machine, the
llama.cpp build and the models that produced them, and every way two files differ in it.

A speed measured on one build is not a speed of another: a build with AMX kernels, or one
that repacks the weights at load, runs other code than one without, on the same CPU. The key
is computed from a results file alone (provenance, hosts, models, config), so a page that puts
two campaigns side by side can state each difference, and a cross-host table can refuse a
mismatched build. A field an older file did not record is "not recorded", which never equals
a value: it cannot be shown to match.

Fields are either about the host (CPU, its flags, cores, GPUs, threads: what a cross-host
table exists to vary) or about the build (llama.cpp and its binding, the kernels compiled in,
the weight buffers it loaded into, the accelerator, the models: what it must hold fixed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phase.results import ResultsFile
from phase.results.host_labels import host_identity_of
from phase.results.llama_build import build_versions, enabled_features

NOT_RECORDED = "not recorded"
Kind = Literal["host", "build"]
# A field's value: text, a set of names (kernels, flags, models), or None (not recorded).
Value = str | frozenset[str] | None


@dataclass(frozen=True)
class KeyField:
    name: str  # what it is, in words ("llama.cpp", "CPU kernels compiled in")
    kind: Kind
    value: Value


@dataclass(frozen=True)
class Difference:
    """One field two files disagree on: each side's value as text, and for a set-valued field
    what only one side has (so a sentence can say "AMX_INT8 on A, not on B")."""

    field: str
    kind: Kind
    a: str
    b: str
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()

    def sentence(self, name_a: str, name_b: str) -> str:
        """The difference in words, naming each side as given."""
        if self.only_a or self.only_b:
            parts = []
            if self.only_a:
                parts.append(f"{', '.join(self.only_a)} on {name_a}, not on {name_b}")
            if self.only_b:
                parts.append(f"{', '.join(self.only_b)} on {name_b}, not on {name_a}")
            return f"{self.field}: {'; '.join(parts)}"
        return f"{self.field}: {self.a} on {name_a}, {self.b} on {name_b}"


def _text(value: Value) -> str:
    if value is None:
        return NOT_RECORDED
    if isinstance(value, frozenset):
        return ", ".join(sorted(value)) or "none"
    return value


def _models(raw: ResultsFile) -> dict[str, str]:
    """Each model the campaign loaded by its role (and level), as name and sha256 prefix."""
    out = {}
    for m in raw.models:
        name = f"{m.role} model" + ("" if m.level is None else f" at {m.level}")
        out[name] = f"{m.name} (sha256 {m.sha256[:12]})"
    return out


def _threads(raw: ResultsFile) -> str:
    p = raw.provenance
    text = f"{p.threads}" if p.threads == p.threads_batch else \
        f"{p.threads} (batch {p.threads_batch})"
    levels = [f for f in raw.config.factors if f.kind == "threads"]
    if levels:
        text += " and levels " + ", ".join(str(v) for v in levels[0].levels)
    return text


def _extra_buffers(value: bool | None) -> str | None:
    if value is None:
        return None
    return "used (AMX tiles or repacked weights, as the CPU allows)" if value else "not used"


def comparability_key(raw: ResultsFile, *, models: bool = True) -> list[KeyField]:
    """What makes this campaign's numbers comparable with another's, in the order pages list
    it (see the module doc); a field the file lacks is None. `models`: with the model fields
    (False where the caller compares the weights by sha256 itself)."""
    p = raw.provenance
    identity = host_identity_of(raw)
    info = p.llama_cpp_system_info
    cpu_flags = getattr(p, "cpu_flags", None)
    buffers = getattr(p, "weight_buffers", None)
    fields = [
        KeyField("CPU", "host", identity.cpu_model),
        KeyField("CPU cores", "host", str(identity.cpu_cores)),
        KeyField("CPU flags", "host", None if cpu_flags is None else frozenset(cpu_flags)),
        KeyField("GPUs", "host", ", ".join(identity.gpus) or "none"),
        KeyField("threads", "host", _threads(raw)),
        KeyField("llama.cpp", "build", build_versions(info)),
        KeyField("llama-cpp-python", "build", p.llama_cpp_python_version),
        KeyField("accelerator build", "build", identity.accelerator or p.accelerator),
        KeyField("CPU kernels compiled in", "build",
                 frozenset(enabled_features(info)) if info else None),
        KeyField("extra CPU buffers", "build", _extra_buffers(p.cpu_extra_buffers)),
        KeyField("weight buffers loaded", "build",
                 None if buffers is None else frozenset(buffers)),
    ]
    if models:
        fields += [KeyField(role, "build", text) for role, text in _models(raw).items()]
    return fields


def differences(a: ResultsFile, b: ResultsFile, *, models: bool = True) -> list[Difference]:
    """Every field of the key on which `a` and `b` differ, as (field, value in a, value in b);
    a field only one of them has (a draft model, a model level) is "none" on the other, and
    one a file did not record is "not recorded", which differs from any value. `models`:
    False leaves the model fields out (see comparability_key)."""
    ka = {f.name: f for f in comparability_key(a, models=models)}
    kb = {f.name: f for f in comparability_key(b, models=models)}
    names = list(ka) + [n for n in kb if n not in ka]
    out = []
    for name in names:
        fa, fb = ka.get(name), kb.get(name)
        either = fa or fb
        assert either is not None  # every name comes from one of the two keys
        kind = either.kind
        va = fa.value if fa is not None else "none"
        vb = fb.value if fb is not None else "none"
        if va == vb and va is not None:
            continue
        if va is None and vb is None:
            continue  # recorded by neither: nothing to tell them apart by
        only_a: tuple[str, ...] = ()
        only_b: tuple[str, ...] = ()
        if isinstance(va, frozenset) and isinstance(vb, frozenset):
            only_a, only_b = tuple(sorted(va - vb)), tuple(sorted(vb - va))
        out.append(Difference(name, kind, _text(va), _text(vb), only_a, only_b))
    return out


def build_differences(a: ResultsFile, b: ResultsFile) -> list[Difference]:
    """The differences that make two campaigns' builds mismatched (see the module doc)."""
    return [d for d in differences(a, b) if d.kind == "build"]


def summary(diffs: list[Difference], name_a: str, name_b: str) -> str:
    """Every difference in one short paragraph: "builds differ: ...; hosts differ: ..."."""
    parts = []
    for kind, label in (("build", "builds differ"), ("host", "hosts differ")):
        said = [d.sentence(name_a, name_b) for d in diffs if d.kind == kind]
        if said:
            parts.append(f"{label}: " + "; ".join(said))
    return ". ".join(parts) + "." if parts else "no recorded difference."

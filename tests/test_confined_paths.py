"""Issue 31, class 2: a path read from a file is checked against its pattern and confined to
its directory (phase.storage.safepath), whatever file it came from: an archived manifest (its
file list, note, results, source and template names), a results file (shard and raw file
names), a prompt's include, a note's file_url. A build given a tampered archive refuses in one
line and writes nothing outside its docs and staging directories, symbolic links included."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import make_results, make_summary, write_results
from sandbox import TRACEBACK, run_phase
from test_publish_inputs import REPO, make_inputs

from phase.base.errors import PhaseError
from phase.campaign.prompts import load_prompt
from phase.publish.site.build import SitePaths, build_site
from phase.results import ResultsError, load
from phase.storage.safepath import PathEscapes, confined

# slow (not in `make test-fast`): a full build per tampered manifest.
pytestmark = pytest.mark.slow

SLUG = "fixture-versions"
ESCAPES = ["../x", "a/../../x", "/etc/hostname", "a//b", "./a", "a/.", "", "a\\..\\b",
           "a/\u0000", "..", "a/\n/b"]


@pytest.mark.parametrize("rel", ESCAPES)
def test_confined_refuses_every_way_out(tmp_path: Path, rel: str) -> None:
    with pytest.raises(PathEscapes) as info:
        confined(tmp_path, rel, "test")
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_confined_refuses_a_symlink_out_and_accepts_a_plain_path(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "link").symlink_to(tmp_path)
    with pytest.raises(PathEscapes, match="symbolic link"):
        confined(tmp_path / "inside", "link/secret", "test")
    assert confined(tmp_path, "a/b.png", "test") == tmp_path / "a" / "b.png"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site built once, with note fixture-versions v1 frozen into an archive."""
    base = tmp_path_factory.mktemp("confined")
    inputs = make_inputs(base / "in", versions=1, repo_notes=False)
    paths = SitePaths.default(REPO, results_dir=inputs.results_dir, notes_dir=inputs.notes_dir,
                              docs_dir=base / "docs", site_dir=base / "site",
                              published_dir=base / "published")
    build_site(paths)
    assert (base / "published" / SLUG / "v1" / "manifest.json").is_file()
    return base


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _tampered(published: Path, tmp_path: Path, change: Callable[[dict[str, Any], Path], None]
              ) -> tuple[Path, list[str]]:
    """A copy of the inputs and archive with the manifest changed; the `phase build` args."""
    shutil.copytree(published / "in", tmp_path / "in")
    shutil.copytree(published / "published", tmp_path / "published")
    manifest = tmp_path / "published" / SLUG / "v1" / "manifest.json"
    data = json.loads(manifest.read_text())
    change(data, manifest.parent)
    manifest.write_text(json.dumps(data, indent=1))
    return manifest, ["build", "--results-dir", str(tmp_path / "in" / "results"),
                      "--notes-dir", str(tmp_path / "in" / "notes"),
                      "--published-dir", str(tmp_path / "published"),
                      "--docs-dir", str(tmp_path / "out" / "docs")]


def _plant(version: Path, rel: str) -> str:
    """A file at `rel` from the version's directory, outside the archive; its sha256."""
    target = (version / rel).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"not part of any published version\n")
    return hashlib.sha256(target.read_bytes()).hexdigest()


def _file_entry(rel: str) -> Callable[[dict[str, Any], Path], None]:
    def change(data: dict[str, Any], version: Path) -> None:
        data["files"][rel] = _plant(version, rel)
    return change


def _symlinked_asset(data: dict[str, Any], version: Path) -> None:
    outside = version.parent.parent.parent / "secret.txt"
    outside.write_text("secret\n")
    (version / "assets" / "leak.png").symlink_to(outside)
    data["files"]["assets/leak.png"] = hashlib.sha256(outside.read_bytes()).hexdigest()


def _field(key: str, value: Any) -> Callable[[dict[str, Any], Path], None]:
    def change(data: dict[str, Any], version: Path) -> None:
        node = data
        *path, last = key.split(".")
        for k in path:
            node = node[int(k)] if k.isdigit() else node[k]
        node[last] = value(node[last]) if callable(value) else value
    return change


TAMPERS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    "files ..": _file_entry("assets/../../../../escaped.txt"),
    "files ../ at the top": _file_entry("../../escaped.txt"),
    "files absolute": lambda d, v: d["files"].__setitem__("/etc/hostname", "0" * 64),
    "files symlink out": _symlinked_asset,
    "note ..": _field("note", "../../x"),
    "results name ..": _field("results.0.name", "../outside.json"),
    "source file ..": _field("source.file", "../../../etc/hostname"),
    "template key ..": _field("templates", lambda t: {**t, "../../x": "0" * 64}),
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_a_tampered_manifest_is_refused_and_nothing_leaves_docs(published: Path, tmp_path: Path,
                                                                tamper: str) -> None:
    _, args = _tampered(published, tmp_path, TAMPERS[tamper])
    before = _tree(tmp_path) - {p for p in _tree(tmp_path) if p.startswith("out")}
    proc = run_phase(args, timeout=600)
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert proc.returncode in (1, 2), (proc.returncode, proc.stderr[-2000:])
    assert "manifest.json" in proc.stdout + proc.stderr
    after = _tree(tmp_path)
    assert {p for p in after if not p.startswith("out")} == before  # nothing outside out/
    # Nothing in out/ either: no docs swapped in, no staging left, nothing written beside.
    assert not [p for p in after if p.startswith("out/")], sorted(after)


def test_results_file_names_are_bare_names(tmp_path: Path) -> None:
    raw = json.loads(make_results().model_dump_json())
    summary = json.loads(make_summary().model_dump_json())
    summary["raw_files"] = ["../../etc/passwd"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summary))
    with pytest.raises(ResultsError, match=r"\$\.raw_files\[0\]"):
        load(path)
    assert load(write_results(make_results(), tmp_path / "ok.json")).id == raw["id"]


def test_a_prompt_include_stays_inside_its_experiment(tmp_path: Path) -> None:
    experiment = tmp_path / "exp"
    (experiment / "prompts").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("outside")
    prompt = experiment / "prompts" / "p.txt"
    prompt.write_text("Read {{include:../secret.txt}}")
    with pytest.raises(PhaseError, match="include") as info:
        load_prompt(prompt)
    assert info.value.exit_code == 2
    (experiment / "input.txt").write_text("inside")
    prompt.write_text("Read {{include:input.txt}}")
    assert load_prompt(prompt).text == "Read inside"

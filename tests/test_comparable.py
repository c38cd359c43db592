"""Comparable only when comparable: the comparability key of a results file, the differences
between two, and the pages that put two campaigns side by side (issue 44, item 7).

Everything runs on the committed results files, read as they are or copied under tmp_path
with another host or build (never edited in results/). The expected differences are computed
from each file's own provenance, not typed.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from factories import write_results

from phase.analysis.comparable import (
    NOT_RECORDED,
    build_differences,
    comparability_key,
    differences,
    summary,
)
from phase.campaign.machine import KERNEL_FLAGS, cpu_flags
from phase.decode.placement import parse
from phase.publish.data.datasets import Dataset, load_dataset
from phase.publish.notes.render import environment
from phase.publish.numbers.builds import Side, compare_sides, versus
from phase.publish.pages.builds import MixedBuildsError
from phase.publish.pages.crosshost import CrossHostKind, build_pages, render_pages
from phase.publish.pages.note import NoteKind
from phase.publish.site.build import SitePaths, build_docs
from phase.results import HostIdentity, HostInfo, ResultsFile, load_raw
from phase.results.llama_build import build_versions, enabled_features
from phase.validate import RuleSettings

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
MEMORY = RESULTS / "memory_bound-x86_64-2c-2026-12-03.json"
CPU_V1 = RESULTS / "speculative-x86_64-2c-2026-11-30.json"
CPU_V2 = RESULTS / "speculative-x86_64-2c-2026-11-30-2.json"
KERNELS = "CPU kernels compiled in"


@pytest.fixture(scope="module")
def memory() -> ResultsFile:
    return load_raw(MEMORY)


@pytest.fixture(scope="module")
def cpu_v1() -> ResultsFile:
    return load_raw(CPU_V1)


@pytest.fixture(scope="module")
def cpu_v2() -> ResultsFile:
    return load_raw(CPU_V2)


def _by_field(a: ResultsFile, b: ResultsFile) -> dict[str, tuple[str, str]]:
    return {d.field: (d.a, d.b) for d in differences(a, b)}


def test_a_file_compared_with_itself_differs_in_nothing(cpu_v2: ResultsFile) -> None:
    assert differences(cpu_v2, cpu_v2) == []
    key = {f.name: f.value for f in comparability_key(cpu_v2)}
    assert key["llama.cpp"] == build_versions(cpu_v2.provenance.llama_cpp_system_info)
    assert key[KERNELS] == frozenset(enabled_features(cpu_v2.provenance.llama_cpp_system_info))
    assert key["target model"] == \
        f"{cpu_v2.models[0].name} (sha256 {cpu_v2.models[0].sha256[:12]})"


def test_memory_bound_and_cpu_speculative_builds_differ_in_their_kernels(
    memory: ResultsFile, cpu_v2: ResultsFile
) -> None:
    mem_features = enabled_features(memory.provenance.llama_cpp_system_info)
    spec_features = enabled_features(cpu_v2.provenance.llama_cpp_system_info)
    only_mem, only_spec = mem_features - spec_features, spec_features - mem_features
    # What the issue reports, read from the files: the memory study's build has AMX kernels.
    assert any(f.startswith("AMX") for f in only_mem)
    diffs = {d.field: d for d in build_differences(memory, cpu_v2)}
    kernels = diffs[KERNELS]
    assert (set(kernels.only_a), set(kernels.only_b)) == (only_mem, only_spec)
    sentence = kernels.sentence("memory-bound", "speculative")
    for feature in only_mem:
        assert f"{feature}" in sentence
    assert "on memory-bound, not on speculative" in sentence
    # The extra CPU buffers (AMX tiles or repacked weights) were off in one and on in the other.
    assert (memory.provenance.cpu_extra_buffers, cpu_v2.provenance.cpu_extra_buffers) == \
        (False, True)
    assert diffs["extra CPU buffers"].a == "not used"
    assert diffs["extra CPU buffers"].b.startswith("used")
    # Different models: the memory study's target is the 0.5B model, and it has no draft.
    sha = {m.role: m.sha256 for m in cpu_v2.models if m.level is None}
    assert diffs["draft model"].a == "none" and sha["draft"][:12] in diffs["draft model"].b
    # Host fields are not build differences.
    assert all(d.kind == "build" for d in diffs.values())
    assert {d.kind for d in differences(memory, cpu_v2)} >= {"build"}


def test_an_older_file_says_not_recorded(cpu_v1: ResultsFile, cpu_v2: ResultsFile) -> None:
    assert cpu_v1.provenance.cpu_extra_buffers is None
    by = _by_field(cpu_v1, cpu_v2)
    assert by["extra CPU buffers"][0] == NOT_RECORDED
    assert by["CPU"] == (cpu_v1.provenance.cpu_model, cpu_v2.provenance.cpu_model)
    # Recorded by neither (both older than schema 12): nothing to tell them apart by.
    assert "CPU flags" not in by and "weight buffers loaded" not in by
    text = summary(differences(cpu_v1, cpu_v2), "v1", "v2")
    assert text.startswith("builds differ: extra CPU buffers: not recorded on v1, used ")
    assert "hosts differ: CPU: " in text and cpu_v1.provenance.cpu_model in text


def test_new_fields_are_compared_where_recorded(cpu_v2: ResultsFile) -> None:
    p = cpu_v2.provenance
    a = cpu_v2.model_copy(update={"provenance": p.model_copy(update={
        "cpu_flags": ["avx2", "avx512f", "amx_int8"], "weight_buffers": ["CPU_Mapped", "AMX"]})})
    b = cpu_v2.model_copy(update={"provenance": p.model_copy(update={
        "cpu_flags": ["avx2", "avx512f"], "weight_buffers": ["CPU_Mapped", "CPU_REPACK"]})})
    diffs = {d.field: d for d in differences(a, b)}
    assert diffs["CPU flags"].only_a == ("amx_int8",) and diffs["CPU flags"].kind == "host"
    assert (diffs["weight buffers loaded"].only_a, diffs["weight buffers loaded"].only_b) == \
        (("AMX",), ("CPU_REPACK",))
    one_side = cpu_v2.model_copy(update={"provenance": p.model_copy(update={"cpu_flags": []})})
    assert _by_field(cpu_v2, one_side)["CPU flags"] == (NOT_RECORDED, "none")


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: Xeon\nflags\t\t: fpu sse4_2 avx2 avx512f "
                   "amx_tile amx_int8 hypervisor\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(x86) == ["amx_int8", "amx_tile", "avx2", "avx512f", "sse4_2"]
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd asimddp sve i8mm cpuid\n")
    assert cpu_flags(arm) == ["asimd", "asimddp", "i8mm", "sve"]
    assert cpu_flags(tmp_path / "absent") is None
    here = cpu_flags()
    assert here is None or set(here) <= KERNEL_FLAGS


def test_build_versions_are_read_from_the_system_info(cpu_v2: ResultsFile) -> None:
    info = cpu_v2.provenance.llama_cpp_system_info
    assert info is not None
    text = build_versions(info)
    assert text is not None and text.startswith("llama ") and ", ggml " in text
    assert text.split(", ")[1] in info
    assert build_versions("CPU : AVX2 = 1 |") is None and build_versions(None) is None


# --- pages -------------------------------------------------------------------------------


def _with_amx_build(raw: ResultsFile, label: str) -> ResultsFile:
    """The campaign as if measured on another host with a build that has AMX kernels and
    loaded no extra CPU buffers (as the memory-bound study's build did)."""
    info = raw.provenance.llama_cpp_system_info or ""
    assert "AMX_INT8" not in info
    amx = info.replace("| LLAMAFILE", "| AMX_INT8 = 1 | LLAMAFILE")
    identity = HostIdentity(cpu_model="Intel(R) Xeon(R) Platinum 8480+", cpu_cores=8,
                            ram_gib=64, gpus=[], gpu_driver=None, accelerator="cpu")
    provenance = raw.provenance.model_copy(update={
        "llama_cpp_system_info": amx, "cpu_extra_buffers": False, "hostname": f"{label}-node",
        "host_class": label, "cpu_model": identity.cpu_model, "cpu_cores": 8})
    runs = [r.model_copy(update={"host": f"{label}-node"}) for r in raw.runs]
    return ResultsFile.model_validate(raw.model_copy(update={
        "id": f"speculative-{label}", "provenance": provenance, "runs": runs,
        "hosts": [HostInfo(hostname=f"{label}-node", host_class=label, identity=identity)],
    }).model_dump())


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory,
               cpu_v2: ResultsFile) -> tuple[Dataset, Dataset]:
    results = tmp_path_factory.mktemp("builds")
    shutil.copyfile(CPU_V2, results / CPU_V2.name)
    write_results(_with_amx_build(cpu_v2, "xeon-8c"), results / "amx.json")
    out = []
    for name in (CPU_V2.name, "amx.json"):
        _, ds = load_dataset(results / name, RuleSettings())
        assert ds is not None
        out.append(ds)
    return out[0], out[1]


def test_a_cross_host_table_refuses_mismatched_builds(two_builds: tuple[Dataset, Dataset]) -> None:
    with pytest.raises(MixedBuildsError) as caught:
        build_pages(list(two_builds))
    message = str(caught.value)
    assert CPU_V2.name in message and "amx.json" in message
    assert "the cross-host table of speculative" in message
    assert "CPU kernels compiled in: AMX_INT8 on " in message
    assert "extra CPU buffers: " in message
    assert "--allow-mixed-builds" in message and "mixed_builds: true" in message
    assert caught.value.exit_code == 1


def test_asked_for_the_table_states_every_difference(
    two_builds: tuple[Dataset, Dataset]
) -> None:
    a, b = two_builds
    assert a.raw_header is not None and b.raw_header is not None
    expected = differences(a.raw_header, b.raw_header)
    for pages in (build_pages([a, b], allow_mixed_builds=True),
                  build_pages([a, b], allowed=frozenset({a.path, b.path}))):
        (page,) = pages
        assert page.mixed_builds
        (pair,) = page.differences
        assert {d.field for d in pair.diffs} == {d.field for d in expected}
    # Both sides must consent: one file allowed is not enough.
    with pytest.raises(MixedBuildsError):
        build_pages([a, b], allowed=frozenset({a.path}))
    text = render_pages(environment(REPO / "templates"), [a, b],
                        allow_mixed_builds=True)["hosts/speculative.md"]
    assert "Builds differ: these campaigns are not like for like." in text
    (pair,) = compare_sides([Side(h, d) for h, d in
                             zip([page.hosts[0].label, page.hosts[1].label], [a, b], strict=True)
                             if d.raw_header is not None])
    for sentence in pair.sentences("build") + pair.sentences("host"):
        assert sentence.split(":")[0] in text
    assert "AMX_INT8 on xeon-8c, not on x86_64-2c" in text or \
        "AMX_INT8 on x86_64-2c, not on xeon-8c" in text
    assert "hosts differ: CPU: " in text


def test_hosts_that_differ_only_as_hosts_are_shown_with_their_differences(
    tmp_path: Path, cpu_v2: ResultsFile
) -> None:
    twin = _with_amx_build(cpu_v2, "xeon-8c").model_copy()
    twin = twin.model_copy(update={"provenance": twin.provenance.model_copy(update={
        "llama_cpp_system_info": cpu_v2.provenance.llama_cpp_system_info,
        "cpu_extra_buffers": cpu_v2.provenance.cpu_extra_buffers})})
    shutil.copyfile(CPU_V2, tmp_path / CPU_V2.name)
    write_results(twin, tmp_path / "twin.json")
    datasets = [load_dataset(tmp_path / n, RuleSettings())[1] for n in (CPU_V2.name, "twin.json")]
    assert all(d is not None for d in datasets)
    (page,) = build_pages([d for d in datasets if d is not None])
    assert not page.mixed_builds
    (pair,) = page.differences
    assert {d.field for d in pair.host} >= {"CPU", "CPU cores"} and not pair.build
    text = render_pages(environment(REPO / "templates"),
                        [d for d in datasets if d is not None])["hosts/speculative.md"]
    assert "differ in their hosts only" in text and "not like for like" not in text


def test_a_new_version_on_another_build_says_how_it_differs(
    two_builds: tuple[Dataset, Dataset]
) -> None:
    a, b = two_builds
    pairs = versus([a], [b], "version 1", "version 2")
    (pair,) = pairs
    assert (pair.a.dataset.name, pair.b.dataset.name) == (a.name, b.name)
    assert pair.build
    assert versus([a], [a], "version 1", "version 2") == []  # the same campaign again
    html = environment(REPO / "templates").get_template("build_differences.html.j2").render(
        pairs=pairs, intro="the two versions' campaigns")
    assert "Builds differ: the two versions&#39; campaigns are not like for like." in html or \
        "Builds differ: the two versions" in html
    assert "AMX_INT8 on version 2, not on version 1" in html


def test_the_load_log_names_the_weight_buffers() -> None:
    log = ["load_tensors: loading model tensors, this can take a while... (mmap = true)\n",
           "load_tensors:   CPU_Mapped model buffer size =   934.70 MiB\n",
           "load_tensors:   CPU_REPACK model buffer size =   657.00 MiB\n",
           "load_tensors:   CPU_REPACK model buffer size =    12.00 MiB\n"]
    p = parse(log, offload_supported=False, n_layer=28, system_info="CPU : AVX2 = 1 |")
    assert p.buffers == ("CPU_Mapped", "CPU_REPACK")
    assert parse([], offload_supported=False, n_layer=28, system_info="").buffers == ()


NOTE = """---
title: "Two builds"
date: 2026-12
finding: "A test note."
reproduce: "make measure"
{extra}versions:
  - version: 1
    date: 2026-12-01
    results: [{first}]
    changes: First.
  - version: 2
    date: 2026-12-02
    results: [{second}]
    changes: Another build.
---

Text.
"""


def _site(tmp_path: Path, two_builds: tuple[Dataset, Dataset], extra: str) -> SitePaths:
    results, notes = tmp_path / "results", tmp_path / "notes"
    results.mkdir(parents=True)
    notes.mkdir()
    for ds in two_builds:
        shutil.copyfile(ds.path, results / ds.name)
    a, b = two_builds
    (notes / "2026-12-two-builds.md").write_text(
        NOTE.format(extra=extra, first=a.name, second=b.name))
    return SitePaths.default(REPO, results_dir=results, notes_dir=notes,
                             docs_dir=tmp_path / "docs", site_dir=tmp_path / "site",
                             published_dir=tmp_path / "published")


def test_a_note_opts_in_to_a_mixed_cross_host_table(
    tmp_path: Path, two_builds: tuple[Dataset, Dataset]
) -> None:
    paths = _site(tmp_path, two_builds, "")
    with pytest.raises(MixedBuildsError, match=r"amx\.json"):
        build_docs(paths, kinds=[CrossHostKind()])
    build_docs(replace(paths, allow_mixed_builds=True), kinds=[CrossHostKind()])
    asked = (paths.docs_dir / "hosts" / "speculative.md").read_text()
    paths = _site(tmp_path / "opted", two_builds, "mixed_builds: true\n")
    build_docs(paths, kinds=[CrossHostKind()])
    text = (paths.docs_dir / "hosts" / "speculative.md").read_text()
    assert text == asked
    assert "Builds differ: these campaigns are not like for like." in text


def test_a_version_on_another_build_says_so_above_its_changes(
    tmp_path: Path, two_builds: tuple[Dataset, Dataset]
) -> None:
    paths = _site(tmp_path, two_builds, "")
    build_docs(paths, kinds=[NoteKind()])
    latest = (paths.docs_dir / "notes" / "two-builds" / "index.md").read_text()
    changes = latest.split("## Changes since the previous version", 1)[1]
    assert "Builds differ: the two versions" in changes
    assert "AMX_INT8 on version 2, not on version 1" in changes
    assert changes.index("Builds differ") < changes.index("phase-changes")
    first = (paths.docs_dir / "notes" / "two-builds" / "v1" / "index.md").read_text()
    assert "Builds differ" not in first


CITING = """---
title: "{title}"
date: 2026-12
finding: "A test note."
reproduce: "make measure"
versions:
  - version: 1
    date: 2026-12-01
    results: [{file}]
---

{body}
"""


def test_a_note_that_cites_another_states_how_their_campaigns_differ(
    tmp_path: Path, two_builds: tuple[Dataset, Dataset]
) -> None:
    results, notes = tmp_path / "results", tmp_path / "notes"
    results.mkdir()
    notes.mkdir()
    a, b = two_builds
    for ds in two_builds:
        shutil.copyfile(ds.path, results / ds.name)
    seed = "summary-speculative-7b.json"
    shutil.copyfile(RESULTS / seed, results / seed)
    (notes / "2026-12-citing.md").write_text(CITING.format(
        title="Citing", file=a.name,
        body='See [the other]({{ note_url("cited") }}) and [the seed]({{ note_url("seed") }}).'))
    (notes / "2026-12-cited.md").write_text(CITING.format(title="Cited", file=b.name,
                                                          body="Text."))
    (notes / "2026-12-seed.md").write_text(CITING.format(title="Seed", file=seed, body="Text."))
    paths = SitePaths.default(REPO, results_dir=results, notes_dir=notes,
                              docs_dir=tmp_path / "docs", site_dir=tmp_path / "site",
                              published_dir=tmp_path / "published")
    build_docs(replace(paths, allow_mixed_builds=True), kinds=[NoteKind()])
    citing = (paths.docs_dir / "notes" / "citing" / "index.md").read_text()
    section = citing.split("## Compared with other notes", 1)[1]
    assert a.raw_header is not None and b.raw_header is not None
    for d in differences(a.raw_header, b.raw_header):
        assert d.field in section
    assert "AMX_INT8 on Cited, not on this note" in section
    assert "Seed: its figures come from a summary that records no build" in section
    # A note that cites none has no such section.
    cited = (paths.docs_dir / "notes" / "cited" / "index.md").read_text()
    assert "Compared with other notes" not in cited


@pytest.mark.model
def test_a_loaded_model_names_its_weight_buffers(test_model_path: Path) -> None:
    from phase.decode import Engine

    with Engine(test_model_path, n_ctx=128, n_threads=1) as engine:
        placement = engine.placement()
        extra = engine.extra_buffers.enabled
    # The real load log names at least the mapped file's buffer, and the extra buffer types
    # (repacked, AMX) only where llama.cpp was allowed them.
    assert placement.buffers and all(b.startswith(("CPU", "AMX")) for b in placement.buffers)
    if not extra:
        assert not {"CPU_REPACK", "AMX"} & set(placement.buffers)


def test_the_provenance_box_says_which_kernels_could_run(memory: ResultsFile) -> None:
    from phase.publish.numbers.provenance import provenance_box

    _, ds = load_dataset(MEMORY, RuleSettings())
    assert ds is not None
    items = dict(provenance_box(ds, "../", {}).items)
    p = memory.provenance
    assert items["Kernels"] == (f"extra CPU buffers (AMX tiles, repacked weights) not used: "
                                f"{p.cpu_extra_buffers_reason}")
    _, old = load_dataset(CPU_V1, RuleSettings())
    assert old is not None and "Kernels" not in dict(provenance_box(old, "../", {}).items)

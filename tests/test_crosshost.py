"""The cross-host page: one experiment side by side across host classes, built from the real
committed campaign and synthetic copies of it "measured" on other host classes.

The copies are test data written under tmp_path (never into results/): the committed runs with
another host identity, speeds scaled, and on one of them a chip energy counter.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from factories import make_sensor, make_window, write_results

from phase.publish.data.datasets import load_dataset
from phase.publish.notes.render import environment
from phase.publish.pages.builds import MixedBuildsError
from phase.publish.pages.crosshost import build_pages, render_pages
from phase.publish.site.build import SitePaths, build_site
from phase.results import HostIdentity, HostInfo, PrimaryEnergy, ResultsFile, SensorInfo, load_raw
from phase.results.host_labels import host_class_of, host_identity_of
from phase.sensors import discover
from phase.sensors.core.primary import Placement, choose_primary
from phase.sensors.replay import replay
from phase.validate import RuleSettings

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "results" / "speculative-x86_64-2c-2026-11-30.json"
GPU = HostIdentity(cpu_model="Intel(R) Xeon(R) Platinum 8480+", cpu_cores=224, ram_gib=2015,
                   gpus=["NVIDIA H200"], gpu_driver="550.54.15", accelerator="cuda")
ARM = HostIdentity(cpu_model="Neoverse-N1", cpu_cores=8, ram_gib=32, gpus=[],
                   gpu_driver=None, accelerator="cpu")
CHIP_W = 300.0
MACHINES = REPO / "tests" / "fixtures" / "sensors" / "machines"
Chip = tuple[list[SensorInfo], PrimaryEnergy]


def on_host(raw: ResultsFile, label: str, identity: HostIdentity, speed: float, *,
            energy: bool = False, days: int = 1, chip: Chip | None = None) -> ResultsFile:
    """The committed campaign as if measured on another host class, `speed` times as fast
    (with a chip counter reading CHIP_W over each decode window when `energy`; with the
    given chip sensors, each reading CHIP_W, and their primary energy record when `chip`)."""
    sensors = [make_sensor("nvml:0:energy", scope="chip", kind="counter")] if energy else []
    primary = None
    if chip is not None:
        sensors, primary = chip
    runs = []
    # The runs happen `days` later, one after another in their order, each as long as it
    # takes at this speed (a slower host's run ends later, and the next starts after it).
    by_order = sorted(raw.runs, key=lambda r: r.order)
    clock = by_order[0].started_unix_s + days * 86400.0
    for run in by_order:
        decode_s = run.decode_s / speed
        start = clock + run.prefill_s
        windows = [make_window(s.name, start_unix_s=start, window_s=decode_s,
                               energy_j=CHIP_W * decode_s) for s in sensors]
        overhead = run.ended_unix_s - run.started_unix_s - run.prefill_s - run.decode_s
        ended = start + decode_s + max(overhead, 0.0)
        # Every step of the trace as much faster as the decode it was timed in.
        trace = [step.model_copy(update={"propose_ms": step.propose_ms / speed,
                                         "verify_ms": step.verify_ms / speed})
                 for step in run.trace]
        runs.append(run.model_copy(update={
            "decode_s": decode_s, "tokens_per_s": run.tokens_per_s * speed, "energy": windows,
            "samples": [], "host": f"{label}-node", "started_unix_s": clock,
            "ended_unix_s": ended, "trace": trace}))
        clock = ended + 2.0
    provenance = raw.provenance.model_copy(update={
        "hostname": f"{label}-node", "host_class": label, "cpu_model": identity.cpu_model,
        "cpu_cores": identity.cpu_cores, "gpus": identity.gpus})
    return ResultsFile.model_validate(raw.model_copy(update={
        "id": f"speculative-{label}", "provenance": provenance, "sensors": sensors,
        "primary_energy": primary,
        "runs": runs, "created": raw.created + timedelta(days=days),
        "hosts": [HostInfo(hostname=f"{label}-node", host_class=label, identity=identity)],
    }).model_dump())


@pytest.fixture(scope="module")
def committed() -> ResultsFile:
    return load_raw(COMMITTED)


@pytest.fixture(scope="module")
def three_hosts(tmp_path_factory: pytest.TempPathFactory, committed: ResultsFile) -> Path:
    results = tmp_path_factory.mktemp("crosshost") / "results"
    results.mkdir()
    (results / COMMITTED.name).write_bytes(COMMITTED.read_bytes())
    write_results(on_host(committed, "h200", GPU, 3.0, energy=True), results / "gpu.json")
    # An older campaign on the same GPU class: linked, not shown.
    write_results(on_host(committed, "h200", GPU, 2.0, energy=True, days=0)
                  .model_copy(update={"id": "old"}), results / "gpu-older.json")
    write_results(on_host(committed, "arm64-8c", ARM, 0.5), results / "arm.json")
    return results


def test_old_files_get_their_host_class_from_provenance(committed: ResultsFile) -> None:
    assert committed.hosts == []
    assert host_class_of(committed) == "x86_64-2c"
    identity = host_identity_of(committed)
    assert (identity.cpu_model, identity.cpu_cores, identity.ram_gib, identity.accelerator) == (
        "AMD EPYC", 2, 24, "cpu")


def test_todays_data_shows_one_host(committed: ResultsFile) -> None:
    _, ds = load_dataset(COMMITTED, RuleSettings())
    assert ds is not None
    (page,) = build_pages([ds])
    assert [h.label for h in page.hosts] == ["x86_64-2c"]
    assert [t.prompt for t in page.tables] == [p.name for p in committed.config.prompts]
    assert all(len(t.rows) == len(committed.config.strategies) for t in page.tables)


class _Rows(HTMLParser):
    """(prompt, strategy, host class key) -> {column: data-value}, and every link to data."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str, str], dict[str, str | None]] = {}
        self.links: list[str] = []
        self._prompt = ""
        self._row: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and "data-prompt" in a:
            self._prompt = a["data-prompt"] or ""
        elif tag == "tr" and "data-strategy" in a:
            self._row = {}
            self.rows[(self._prompt, a["data-strategy"] or "", a["data-host-class"] or "")] = \
                self._row
        elif tag == "td" and self._row is not None and "data-key" in a:
            self._row[a["data-key"] or ""] = a.get("data-value")
        elif tag == "a" and a.get("class") == "phase-raw-link":
            self.links.append(a["href"] or "")


def _mean_speed(raw: ResultsFile, prompt: str, strategy: str) -> float:
    """The condition's median tokens/s, as summaries hold it."""
    return statistics.median(r.tokens_per_s for r in raw.runs
                             if r.prompt == prompt and r.strategy == strategy)


@pytest.mark.slow  # a whole site: mkdocs build
def test_three_host_classes_side_by_side_in_the_built_site(
    three_hosts: Path, tmp_path: Path, committed: ResultsFile
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    paths = SitePaths.default(REPO, results_dir=three_hosts, notes_dir=notes,
                              docs_dir=tmp_path / "docs", site_dir=tmp_path / "site",
                              published_dir=tmp_path / "published")
    # The H200 copies claim a CUDA build beside the committed CPU build: refused unless asked.
    with pytest.raises(MixedBuildsError, match=r"accelerator build: .*cuda on h200"):
        build_site(paths)
    build_site(replace(paths, allow_mixed_builds=True))
    html = (paths.site_dir / "hosts" / "speculative.html").read_text()
    assert "Builds differ: these campaigns are not like for like." in html
    parsed = _Rows()
    parsed.feed(html)
    keys = {key for _, _, key in parsed.rows}
    assert len(keys) == 3  # three host classes
    for label in ("x86_64-2c", "h200", "arm64-8c"):
        assert f"<td>{label}</td>" in html
    # Each host's results file is linked, and every link resolves in the built site.
    for name in (COMMITTED.stem, "gpu", "arm", "gpu-older"):
        assert f"../raw/{name}.html" in html
    assert len(parsed.links) > len(parsed.rows)
    pages: dict[str, str] = {}
    for href in parsed.links:
        page, _, fragment = href.partition("#")
        target = (paths.site_dir / "hosts" / page).resolve()
        assert target.is_file(), href
        text = pages.setdefault(page, target.read_text())
        assert not fragment or f'id="{fragment}"' in text, href
    strategies = committed.config.strategies
    assert len(parsed.rows) == len(committed.config.prompts) * len(strategies) * 3
    gpu_key = next(k for (p, s, k), cells in parsed.rows.items() if cells.get("chip"))
    for prompt in (p.name for p in committed.config.prompts):
        for strategy in strategies:
            by_host = {k: cells for (p, s, k), cells in parsed.rows.items()
                       if (p, s) == (prompt, strategy)}
            speeds = sorted(float(c["tokens_per_s"] or 0) for c in by_host.values())
            base = _mean_speed(committed, prompt, strategy)
            assert speeds == pytest.approx([0.5 * base, base, 3.0 * base])
            # Speed vs plain is a within-host ratio: the same on every host here.
            ratios = {round(float(c["speed_vs_plain"] or 0), 9) for c in by_host.values()}
            assert len(ratios) == 1
            # Energy only where the host measured it: 300 W at 3x speed.
            chip = by_host[gpu_key]["chip"]
            expected_mj = statistics.median(
                CHIP_W * r.decode_s / 3.0 / r.tokens * 1000 for r in committed.runs
                if r.prompt == prompt and r.strategy == strategy)
            assert float(chip or 0) == pytest.approx(expected_mj)
            assert all(c["chip"] is None for k, c in by_host.items() if k != gpu_key)
    index = (paths.site_dir / "hosts" / "index.html").read_text()
    assert 'href="speculative.html"' in index and "3 host classes" in index
    home = (paths.site_dir / "index.html").read_text()
    assert re.search(r'href="hosts/index.html"', home)


def test_text_from_data_is_escaped(tmp_path: Path, committed: ResultsFile) -> None:
    # The prompt renamed everywhere it is named: runs (and their scheduled ids), the config,
    # the plain reference.
    runs = [r.model_copy(update={"prompt": "<b>x</b>", "id": r.id.replace("-code-", "-<b>x</b>-")})
            if r.prompt == "code" else r for r in committed.runs]
    prompts = [p.model_copy(update={"name": "<b>x</b>"}) if p.name == "code" else p
               for p in committed.config.prompts]
    references = [r.model_copy(update={"prompt": "<b>x</b>"}) if r.prompt == "code" else r
                  for r in committed.references]
    raw = ResultsFile.model_validate(committed.model_copy(update={
        "runs": runs, "config": committed.config.model_copy(update={"prompts": prompts}),
        "references": references, "experiment": "spec<i>ulative"}).model_dump())
    path = write_results(raw, tmp_path / "x.json")
    _, ds = load_dataset(path, RuleSettings())
    assert ds is not None
    pages = render_pages(environment(REPO / "templates"), [ds])
    text = "\n".join(v for k, v in pages.items() if k.endswith(".md"))
    assert all(isinstance(v, bytes) for k, v in pages.items() if not k.endswith(".md"))
    assert "<b>x</b>" not in text and "<i>" not in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text or "&#60;b&#62;x" in text


def jetson_chip(fixture: str) -> Chip:
    """The chip sensors and primary energy record phase chooses on a replayed Jetson (the
    module's real rail layout, tests/fixtures/sensors/machines), as a campaign records them."""
    machine, roots = replay.machine(replay.load(MACHINES / f"{fixture}.json"))
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    try:
        primary, why = choose_primary(found.sensors, Placement("cuda", None), env={})
        assert primary is not None, why
        sensors = [make_sensor(s.name, backend=s.backend, scope=s.scope, kind="counter")
                   for s in found.sensors if s.name in primary.sensors]
    finally:
        found.close()
    return sensors, primary


JETSON = HostIdentity(cpu_model="ARMv8 Processor rev 1 (v8l)", cpu_cores=8, ram_gib=16,
                      gpus=[], gpu_driver=None, accelerator="cuda")


def _jetson_page(tmp_path: Path, committed: ResultsFile,
                 hosts: dict[str, str]) -> tuple[str, dict[str, dict[str, str | None]]]:
    """The page of the committed campaign replayed on each Jetson (label -> fixture): its
    Markdown, and the chip cells' hover text per host class label (every host has chip
    figures, so every one is compared)."""
    paths = []
    for i, (label, fixture) in enumerate(hosts.items()):
        identity = JETSON.model_copy(update={"cpu_cores": 6 + 2 * i})
        raw = on_host(committed, label, identity, 1.0 + i, chip=jetson_chip(fixture))
        paths.append(write_results(raw, tmp_path / f"{fixture}.json"))
    datasets = [load_dataset(p, RuleSettings())[1] for p in paths]
    assert all(ds is not None for ds in datasets)
    (page,) = build_pages([ds for ds in datasets if ds is not None])
    assert {h.label for h in page.coverage.hosts} == set(hosts)
    titles: dict[str, dict[str, str | None]] = {}
    for t in page.tables:
        for r in t.rows:
            titles.setdefault(r.host.label, {})[f"{t.prompt}/{r.strategy}"] = \
                r.cells["chip"].title
    pages = render_pages(environment(REPO / "templates"),
                         [ds for ds in datasets if ds is not None])
    return pages[page.path], titles


def test_jetsons_whose_chip_figures_cover_the_same_parts_are_compared_without_warning(
    tmp_path: Path, committed: ResultsFile
) -> None:
    text, titles = _jetson_page(tmp_path, committed, {"orin-nx": "jetson-orin-nx",
                                                      "orin-nano": "jetson-orin-nano"})
    assert set(titles) == {"orin-nx", "orin-nano"}
    # Both have chip figures (so they were compared), none marked.
    assert all(t is None for host in titles.values() for t in host.values())
    assert "not like for like" not in text and "†" not in text


def test_agx_orin_and_orin_nx_chip_figures_are_not_like_for_like(
    tmp_path: Path, committed: ResultsFile
) -> None:
    text, titles = _jetson_page(tmp_path, committed, {"agx<i>orin</i>": "jetson-agx-orin",
                                                      "orin-nx": "jetson-orin-nx"})
    assert "Chip energy is not like for like across these hosts" in text
    assert "they differ in soc)" in text  # the AGX Orin's VDD_GPU_SOC includes the SoC
    assert "agx&lt;i&gt;orin&lt;/i&gt;: cpu, gpu, cv, soc" in text or \
        "agx&#60;i&#62;orin" in text
    assert "orin-nx: cpu, gpu, cv</li>" in text
    assert "<i>orin</i>" not in text
    agx = next(v for k, v in titles.items() if k.startswith("agx"))
    assert set(agx.values()) == {"† covers cpu, gpu, cv, soc; the hosts' chip figures differ "
                                 "in soc"}
    assert set(titles["orin-nx"].values()) == {"† covers cpu, gpu, cv; the hosts' chip "
                                               "figures differ in soc"}
    assert text.count(" †</td>") == sum(len(v) for v in titles.values())  # every chip cell


def test_a_host_whose_chip_coverage_is_unknown_is_not_like_for_like(
    tmp_path: Path, committed: ResultsFile
) -> None:
    nx = on_host(committed, "orin-nx", JETSON, 1.0, chip=jetson_chip("jetson-orin-nx"))
    # An older file: no primary_energy record, and a chip sensor whose parts phase cannot tell.
    old = on_host(committed, "h200", GPU, 3.0, energy=True)
    assert old.primary_energy is None
    datasets = [load_dataset(write_results(r, tmp_path / f"{r.id}.json"), RuleSettings())[1]
                for r in (nx, old)]
    text = next(v for k, v in render_pages(
        environment(REPO / "templates"), [ds for ds in datasets if ds is not None]).items()
        if k.endswith("speculative.md"))
    assert "not like for like" in text
    assert "what h200 covers is not recorded" in text
    assert "h200: unknown</li>" in text


def test_a_confirmation_never_stands_in_for_its_campaign() -> None:
    """A confirmation re-measures one condition on its selection's machine and build, and is
    newer: as a host's file the table would show its two strategies for the whole campaign
    (and set a new build against every other host's)."""
    names = ["speculative_sampling-x86_64-2c-2026-12-03.json",
             "speculative_sampling-x86_64-2c-2026-12-03-confirm.json"]
    datasets = [load_dataset(REPO / "results" / n, RuleSettings())[1] for n in names]
    assert datasets[1].raw_header is not None and datasets[1].raw_header.confirms is not None
    (page,) = build_pages(datasets)
    assert page.campaigns == 1
    assert [h.dataset for h in page.hosts] == [names[0]]
    assert {t.prompt for t in page.tables} == {"code", "prose", "edit"}
    assert len({r.strategy for t in page.tables for r in t.rows}) == 4

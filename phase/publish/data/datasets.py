"""One results file as the publisher sees it: bytes, sha256, model, findings, summary rows.

A raw file's summary is derived here, in memory (phase.analysis.summarize); nothing is
written back into the results directory.

A build reads each file once: a Dataset holds its bytes (the raw data page offers them for
download, and they are what was validated and hashed), and every page reads the file through
it, never from disk again.

What a build needs of most files is small: the findings, the summary rows and the header
(who, where, when, how many runs). The runs themselves (megabytes of per-step traces) are
needed only to draw a page that is not published yet. So a Dataset holds the header, and
parses `results` from its bytes the first time something asks for it; with the build cache
(phase.publish.data.cache) an unchanged file is not parsed again until a page needs its runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from phase.analysis import summarize
from phase.results import ResultsError, ResultsFile, SummaryFile, parse
from phase.storage.jsonread import decode_utf8, parse_json, read_regular_bytes
from phase.validate import Report, RuleSettings, validate_file, validate_results


@dataclass(frozen=True)
class Dataset:
    path: Path
    name: str  # file name, the identity pages use (never the absolute path: pages must not
    # depend on where the results directory happens to be)
    sha256: str
    data: bytes = field(repr=False, compare=False)  # the file's bytes, read once per build
    # The file without its runs (a summary file: the file itself); `n_runs` counts them.
    header: ResultsFile | SummaryFile
    n_runs: int
    report: Report
    summary: SummaryFile  # derived for raw files; the file itself for summary files
    # The schema version the file was written with (pages show it; `results` is migrated).
    schema_version: int
    load_results: Callable[[], ResultsFile | SummaryFile] = field(repr=False, compare=False)

    @cached_property
    def results(self) -> ResultsFile | SummaryFile:
        """The whole file, runs and all (loaded on first use)."""
        return self.load_results()

    @property
    def size_bytes(self) -> int:
        return len(self.data)

    @property
    def stem(self) -> str:
        return page_stem(self.name)

    @property
    def is_raw(self) -> bool:
        return isinstance(self.header, ResultsFile)

    @property
    def raw_header(self) -> ResultsFile | None:
        """A raw file's header (no runs); None for a summary file."""
        return self.header if isinstance(self.header, ResultsFile) else None

    @property
    def raw(self) -> ResultsFile | None:
        """A raw file with its runs (loads them); None for a summary file."""
        if not self.is_raw:
            return None
        results = self.results
        assert isinstance(results, ResultsFile)
        return results

    @property
    def summary_only(self) -> bool:
        return isinstance(self.header, SummaryFile) and self.header.summary_only

    @property
    def derived_summary(self) -> bool:
        """A summary the build derived from a raw file (it has its own page: the raw one)."""
        return isinstance(self.header, SummaryFile) and not self.header.summary_only


def page_stem(file_name: str) -> str:
    stem = file_name[:-5] if file_name.endswith(".json") else file_name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem)


def load_dataset(path: Path, settings: RuleSettings) -> tuple[Report, Dataset | None]:
    """Read and validate a file (dataset_of); the Dataset is None when it cannot be published."""
    try:
        data = read_regular_bytes(path)
    except ResultsError:
        return validate_file(path, settings), None  # the blocking report, naming the problem
    return dataset_of(path, data, settings)


def dataset_of(path: Path, data: bytes, settings: RuleSettings
               ) -> tuple[Report, Dataset | None]:
    """Validate a file's bytes, as read once; the Dataset is None when it cannot be published:
    blocking findings, or a campaign that has not finished a single run yet (nothing to show,
    not an error). What is validated, published and hashed are the same bytes."""
    try:
        parsed = parse_json(decode_utf8(data, path), path)
        written_as = parsed.get("schema_version") if isinstance(parsed, dict) else None
        results = parse(parsed, path)
    except ResultsError:
        return validate_file(path, settings), None  # the blocking report, naming the problem
    report = validate_results(results, str(path), settings)
    if report.blocking:
        return report, None
    if isinstance(results, ResultsFile) and not results.runs:
        return report, None
    summary = (
        results if isinstance(results, SummaryFile) else summarize(results, report, path.name)
    )
    return report, make_dataset(
        path, data, results, report, summary,
        int(written_as) if isinstance(written_as, int) else results.schema_version)


def header_of(results: ResultsFile | SummaryFile) -> ResultsFile | SummaryFile:
    return results.model_copy(update={"runs": []}) if isinstance(results, ResultsFile) else results


def make_dataset(path: Path, data: bytes, results: ResultsFile | SummaryFile,
                 report: Report, summary: SummaryFile, schema_version: int) -> Dataset:
    """A Dataset of a file loaded whole (its results are already in memory)."""
    n_runs = len(results.runs) if isinstance(results, ResultsFile) else 0
    ds = Dataset(path=path, name=path.name, sha256=hashlib.sha256(data).hexdigest(), data=data,
                 header=header_of(results), n_runs=n_runs, report=report, summary=summary,
                 schema_version=schema_version, load_results=lambda: results)
    ds.__dict__["results"] = results  # already loaded: the cached_property's slot
    return ds

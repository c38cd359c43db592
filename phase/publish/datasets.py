"""One results file as the publisher sees it: bytes, sha256, model, findings, summary rows.

A raw file's summary is derived here, in memory (phase.analysis.summarize); nothing is
written back into the results directory.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from phase.analysis import summarize
from phase.results import ResultsFile, SummaryFile
from phase.validate import Report, RuleSettings, validate_file


@dataclass(frozen=True)
class Dataset:
    path: Path
    name: str  # file name, the identity pages use (never the absolute path: pages must not
    # depend on where the results directory happens to be)
    sha256: str
    size_bytes: int
    results: ResultsFile | SummaryFile
    report: Report
    summary: SummaryFile  # derived for raw files; the file itself for summary files
    # The schema version the file was written with (pages show it; `results` is migrated).
    schema_version: int

    @property
    def stem(self) -> str:
        return page_stem(self.name)

    @property
    def raw(self) -> ResultsFile | None:
        return self.results if isinstance(self.results, ResultsFile) else None

    @property
    def summary_only(self) -> bool:
        return isinstance(self.results, SummaryFile) and self.results.summary_only

    @property
    def derived_summary(self) -> bool:
        """A summary the build derived from a raw file (it has its own page: the raw one)."""
        return isinstance(self.results, SummaryFile) and not self.results.summary_only


def page_stem(file_name: str) -> str:
    stem = file_name[:-5] if file_name.endswith(".json") else file_name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem)


def load_dataset(path: Path, settings: RuleSettings) -> tuple[Report, Dataset | None]:
    """Validate a file; the Dataset is None when it cannot be published: blocking findings,
    or a campaign that has not finished a single run yet (nothing to show, not an error)."""
    report = validate_file(path, settings)
    if report.blocking or report.results is None:
        return report, None
    if isinstance(report.results, ResultsFile) and not report.results.runs:
        return report, None
    data = path.read_bytes()
    results = report.results
    summary = (
        results if isinstance(results, SummaryFile) else summarize(results, report, path.name)
    )
    return report, Dataset(
        path=path,
        name=path.name,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        results=results,
        report=report,
        summary=summary,
        schema_version=int(json.loads(data)["schema_version"]),
    )

"""One results file as the publisher sees it: bytes, sha256, model, findings, summary rows.

A raw file's summary is derived here, in memory (phase.analysis.summarize); nothing is
written back into the results directory.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from phase.analysis import summarize
from phase.results import ResultsError, ResultsFile, SummaryFile, parse
from phase.results.jsonread import parse_json, read_regular_text
from phase.validate import Report, RuleSettings, validate_file, validate_results


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
    or a campaign that has not finished a single run yet (nothing to show, not an error).

    The file is read once: what is validated, published and hashed are the same bytes."""
    try:
        text = read_regular_text(path)
        data = parse_json(text, path)
        written_as = data.get("schema_version") if isinstance(data, dict) else None
        results = parse(data, path)
    except ResultsError:
        return validate_file(path, settings), None  # the blocking report, naming the problem
    report = validate_results(results, str(path), settings)
    if report.blocking:
        return report, None
    if isinstance(results, ResultsFile) and not results.runs:
        return report, None
    raw = text.encode("utf-8")  # the file's bytes: it was strict UTF-8 without a BOM
    summary = (
        results if isinstance(results, SummaryFile) else summarize(results, report, path.name)
    )
    return report, Dataset(
        path=path,
        name=path.name,
        sha256=hashlib.sha256(raw).hexdigest(),
        size_bytes=len(raw),
        results=results,
        report=report,
        summary=summary,
        schema_version=int(written_as) if isinstance(written_as, int) else results.schema_version,
    )

"""Every table of figures as files a reader can take away: a CSV and a JSON of exactly the rows
the table shows (exact values, not the rounded text), each with its sha256 on the page.

Tables are turned into pandas DataFrames here, once; `to_csv` and `to_json` write them. The
bytes are a pure function of the table, so a frozen page's downloads stay byte-identical.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phase.publish.data.datasets import Dataset
from phase.publish.numbers.findings import FindingRow
from phase.publish.numbers.tables import Table, build_table
from phase.publish.numbers.temperature import Change, TemperatureRow
from phase.results import ResultsFile

if TYPE_CHECKING:  # pandas costs a process ~0.4 s to import: only a build with tables pays it
    import pandas as pd


@dataclass(frozen=True)
class TableFile:
    name: str  # file name; pages link to it relative to where it is written
    href: str
    fmt: str  # "CSV" or "JSON"
    sha256: str
    size_bytes: int
    data: bytes


@dataclass(frozen=True)
class TableDownloads:
    """The CSV and JSON of one table (what a page shows under the table)."""

    label: str
    files: list[TableFile]


def frame_files(frame: pd.DataFrame, stem: str, href_dir: str, label: str) -> TableDownloads:
    csv = frame.to_csv(index=False, lineterminator="\n").encode()
    text = frame.to_json(orient="records", indent=1, force_ascii=False, double_precision=15)
    json_bytes = (text + "\n").encode()
    files = [
        TableFile(f"{stem}.csv", f"{href_dir}{stem}.csv", "CSV",
                  hashlib.sha256(csv).hexdigest(), len(csv), csv),
        TableFile(f"{stem}.json", f"{href_dir}{stem}.json", "JSON",
                  hashlib.sha256(json_bytes).hexdigest(), len(json_bytes), json_bytes),
    ]
    return TableDownloads(label, files)


def results_frame(table: Table) -> pd.DataFrame:
    """One row per table row: prompt, strategy, each column's exact value (and the ends of its
    95% interval, in columns "<label> low" and "<label> high", for a column where any row has
    one), the runs behind it."""
    with_interval = {c.key for c in table.columns
                     if any(row.cells[c.key].interval is not None for row in table.rows)}
    records: list[dict[str, Any]] = []
    for row in table.rows:
        record: dict[str, Any] = {"prompt": row.prompt, "strategy": row.strategy}
        record.update(zip(table.factors, row.levels, strict=True))
        for column in table.columns:
            cell = row.cells[column.key]
            record[column.label] = cell.value
            if column.key in with_interval:
                record[f"{column.label} low"] = cell.low
                record[f"{column.label} high"] = cell.high
            if cell.struck:
                record[f"{column.label} (rejected)"] = True
        if "acceptance" in row.cells:
            # The counts the rate rests on, summed over the row's runs (after every figure).
            counts = row.cells["acceptance"].counts
            record["accepted tokens"] = counts.kept if counts else None
            record["drafted tokens"] = counts.tried if counts else None
        record["unstable"] = row.unstable or ""
        record["runs"] = " ".join(link.title.removeprefix("run ") for link in row.links
                                  if link.title.startswith("run "))
        records.append(record)
    import pandas as pd

    return pd.DataFrame.from_records(records)


def findings_frame(rows: list[FindingRow]) -> pd.DataFrame:
    columns = ["severity", "rule", "condition", "run", "sensor", "value", "message"]
    import pandas as pd

    return pd.DataFrame.from_records(
        [
            {
                "severity": f.severity,
                "rule": f.rule,
                "condition": f.condition or "",
                "run": f.link.label if f.link is not None and f.link.label != "row" else "",
                "sensor": f.sensor or "",
                "value": f.value.value if f.value is not None else None,
                "message": f.message,
            }
            for f in rows
        ],
        columns=columns,
    )


def cells_frame(header: list[str], rows: list[list[Any]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame.from_records(rows, columns=header)


def temperature_frame(rows: list[TemperatureRow]) -> pd.DataFrame:
    return cells_frame(
        ["strategy", "prompt", "temperature", "runs", "acceptance_median_of_runs", "accepted",
         "drafted", "speed_vs_plain", "energy_ratio_vs_plain"],
        [[r.strategy, r.prompt, r.temperature, r.n, r.acceptance,
          r.counts.kept if r.counts else None, r.counts.tried if r.counts else None,
          r.speed_vs_plain, r.energy_ratio_vs_plain] for r in rows])


def changes_frame(changes: list[Change]) -> pd.DataFrame:
    return cells_frame(
        ["strategy", "prompt", "temperature", "acceptance_change_points",
         "speed_vs_plain_sampled_over_greedy", "energy_vs_plain_sampled_over_greedy"],
        [[c.strategy, c.prompt, c.temperature, c.acceptance_change, c.speed_change,
          c.energy_change] for c in changes])


def runs_frame(raw: ResultsFile) -> pd.DataFrame:
    """A raw file's runs table, exact values, in the order the runs ran; energy in J per
    declared sensor."""
    fields = ["id", "repeat", "order", "prompt", "strategy", "k", "tokens", "tokens_per_s",
              "prefill_s", "decode_s", "steps", "drafted", "accepted", "acceptance", "cpu_s",
              "matches_plain", "first_divergence"]
    sensors = [s.name for s in raw.sensors]
    rows = []
    for run in sorted(raw.runs, key=lambda r: r.order):
        windows = {w.sensor: w.energy_j for w in reversed(run.energy)}
        passes = run.passes or []
        rows.append([getattr(run, f) for f in fields]
                    + [max(len(passes), 1), sum(p.tokens for p in passes) or run.tokens]
                    + [windows.get(s) for s in sensors] + [run.output_sha256])
    return cells_frame([*fields, "passes", "window_tokens",
                        *(f"{s}_energy_j" for s in sensors), "output_sha256"], rows)


def data_table(ds: Dataset) -> TableDownloads:
    """The table a file's data page shows, as CSV and JSON next to that page (raw/): every
    run of a raw file, or every row of a summary."""
    if ds.raw is not None:
        return frame_files(runs_frame(ds.raw), f"{ds.stem}-runs", "", f"this table ({ds.name})")
    return frame_files(results_frame(build_table(ds, "../")), f"{ds.stem}-rows", "",
                       f"this table ({ds.name})")

"""Confirmation campaigns beside the campaigns they confirm (phase.campaign.confirm).

A confirmation file is not a version of any note: it is the fresh evidence for one campaign's
headline. `attach` pairs each with its selection by the file name and sha256 it records; a
confirmation whose selection is missing, whose selection's bytes changed, or that ran other
model files confirms nothing, and stops the build naming both files.

    attach(datasets)   {selection file name: its confirmation's Dataset}
    is_confirmation(ds)
"""

from __future__ import annotations

from collections.abc import Iterable

from phase.analysis.comparable import NOT_RECORDED, differences, summary
from phase.base.errors import PhaseError
from phase.publish.data.datasets import Dataset
from phase.results import ResultsFile

# The build's attach() result, set on the Jinja environment for the notes' confirmation().
CONFIRMATIONS_GLOBAL = "phase_confirmations"

class ConfirmationError(PhaseError):
    """A confirmation file that cannot stand beside its selection (exit 1: the build stops)."""

    exit_code = 1


def is_confirmation(ds: Dataset) -> bool:
    header = ds.raw_header
    return header is not None and header.confirms is not None


def _models(header: ResultsFile) -> dict[tuple[str, str | None], str]:
    return {(m.role, m.level): m.sha256 for m in header.models}


def attach(datasets: Iterable[Dataset]) -> dict[str, Dataset]:
    every = list(datasets)
    by_name = {ds.name: ds for ds in every}
    out: dict[str, Dataset] = {}
    for ds in every:
        header = ds.raw_header
        if header is None or header.confirms is None:
            continue
        confirms = header.confirms
        where = f"{ds.name}: $.confirms"
        selection = by_name.get(confirms.file)
        if selection is None or selection.raw_header is None:
            raise ConfirmationError(f"{where}.file: the campaign it confirms, {confirms.file}, "
                                    "is not among the results files; add it or remove the "
                                    "confirmation")
        if selection.sha256 != confirms.sha256:
            raise ConfirmationError(f"{where}.sha256: {confirms.file} is not the file it "
                                    f"confirmed (sha256 {selection.sha256[:12]}…, recorded "
                                    f"{confirms.sha256[:12]}…); results files never change")
        differ = {k for k, v in _models(header).items()
                  if _models(selection.raw_header).get(k) != v}
        if differ:
            raise ConfirmationError(f"{ds.name}: $.models: ran other model files than "
                                    f"{confirms.file} ({', '.join(sorted(r for r, _ in differ))}"
                                    "); a confirmation must measure the same weights")
        # What both files recorded must agree; a field the older file lacks cannot show a
        # difference (it is not evidence of one either way). The weights were compared by
        # sha256 above: a draft the confirmed strategy does not load is no difference.
        known = [d for d in differences(selection.raw_header, header, models=False)
                 if NOT_RECORDED not in (d.a, d.b)]
        if known:
            raise ConfirmationError(
                f"{ds.name}: $.provenance: not the machine and build of {confirms.file}: "
                + summary(known, confirms.file, ds.name)
                + " A confirmation must run where the campaign it confirms ran.")
        if confirms.file in out:
            raise ConfirmationError(f"{ds.name}: {confirms.file} is confirmed twice (also by "
                                    f"{out[confirms.file].name}); keep one confirmation")
        out[confirms.file] = ds
    return out

"""The run-by-run writer of a results file: the campaign's version on disk after each run.

Every version is written as phase.storage.writing writes any file (complete, then linked or
renamed into place), under the claim (phase.storage.claim) the campaign holds for the whole
run; the first version is created exclusively, later ones replace it atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from phase.results.io import dump_json, load_raw
from phase.results.migrations import ResultsError
from phase.results.schema import ResultsFile, Run
from phase.storage.claim import Claim, claim_existing, claim_new
from phase.storage.writing import WriteFailed, atomic_write_text, create_exclusive


def claim_new_results(path: Path | str) -> Claim:
    """The lock on a new results file (`-o`); an existing one may be continued instead."""
    return claim_new(path, "-o", f"Choose another -o, or continue it with --resume {path}")


class CampaignWriter:
    """Persists a campaign after each finished run, as the one writer of its file.

    It holds the file's claim (phase.storage.claim) and releases it when the campaign
    finishes or the writer is closed. `saved_runs` is the number of runs in the version on
    disk, which is what a message after a failed write reports.
    """

    def __init__(self, target: Path | str | Claim, results: ResultsFile, *,
                 exists: bool = False) -> None:
        self.claim = target if isinstance(target, Claim) else (
            claim_existing(target) if exists else claim_new_results(target))
        self.path = self.claim.path
        self.results = results
        self._on_disk = exists
        self.saved_runs = len(results.runs) if exists else 0
        try:
            if results.status == "complete":
                raise ResultsError(
                    f"{self.path}: campaign is complete; results files are immutable")
            self._flush()
        except BaseException:
            self.claim.release()
            raise

    @classmethod
    def resume(cls, path: Path | str) -> CampaignWriter:
        claim = claim_existing(path)
        try:
            results = load_raw(path)
            if results.status == "complete":
                raise ResultsError(f"{path}: campaign already complete; nothing to resume")
        except BaseException:
            claim.release()
            raise
        results.status = "running"
        return cls(claim, results, exists=True)

    def _flush(self) -> None:
        text = dump_json(self.results)
        try:
            if self._on_disk:
                atomic_write_text(self.claim.target, text)
            else:
                create_exclusive(self.claim.target, text)
                self._on_disk = True
        except ResultsError as exc:
            # Name the file as the user did, not as the filesystem resolves it.
            raise type(exc)(str(exc).replace(str(self.claim.target), str(self.path), 1),
                            exit_code=exc.exit_code) from None
        self.saved_runs = len(self.results.runs)

    def add_run(self, run: Run) -> None:
        if any(r.id == run.id for r in self.results.runs):
            raise ResultsError(f"{self.path}: run {run.id} is already recorded")
        self.results.runs.append(run)
        try:
            self._flush()
        except WriteFailed as exc:
            raise WriteFailed(
                f"{exc}; the file still holds the {self.saved_runs} run(s) saved before",
                exit_code=exc.exit_code,
            ) from None

    def finish(self, status: Literal["complete", "interrupted"] = "complete") -> None:
        """Write the final status and give up the claim (kept if the write fails, so that
        the caller can still record the campaign as interrupted)."""
        self.results.status = status
        self._flush()
        self.close()

    def try_finish(self, status: Literal["complete", "interrupted"]) -> bool:
        """Finish on a failure path: a second write error must not hide the first."""
        try:
            self.finish(status)
        except ResultsError:
            self.close()
            return False
        return True

    def close(self) -> None:
        self.claim.release()

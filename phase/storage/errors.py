"""The one error storage raises: a file could not be read or written as phase requires.

phase.results names the same class ResultsError (a results file that fails is a storage
failure first: not a regular file, not strict JSON, not writable), so a caller that catches
ResultsError catches these as it always has.
"""

from __future__ import annotations

from phase.base.errors import PhaseError


class StorageError(PhaseError):
    """A file could not be read or written; the message names file, JSON path and problem.
    Bad input (exit 2) unless a subclass says otherwise (a write that failed)."""

    exit_code = 2

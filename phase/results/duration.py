"""The time a campaign stated before its runs (schema 15): what `phase measure` printed once
the cost profile was measured (phase.campaign.duration), kept so that what the runs took can
be checked against it afterwards (phase.analysis.duration, validation rule `duration`)."""

from __future__ import annotations

from phase.results.base import FiniteFloat, NonNegFloat, NonNegInt, Strict


class StatedDuration(Strict):
    """The statement, as printed. A resumed campaign states again for the runs it has left,
    and that statement replaces the earlier one: it covers the runs started after
    `stated_unix_s`."""

    stated_unix_s: FiniteFloat
    # The planned runs not yet recorded when it was stated, and their expected time (None:
    # no decode time to price them by, as the statement says).
    runs: NonNegInt
    estimated_s: NonNegFloat | None
    # What adaptive rounds may add (None: no adaptive rounds, or no such limit) and how often
    # a disturbed run may be re-run (0: never).
    extra_budget_s: NonNegFloat | None
    extra_budget_runs: NonNegInt | None
    max_reruns: NonNegInt
    # The line printed, which says the estimate's basis (the acceptance it assumes).
    statement: str

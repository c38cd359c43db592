"""What a confirmation campaign confirms (`ResultsFile.confirms`, schema 12): a headline chosen
as the best of many conditions is biased upward (the winner's curse), so it is measured again
on fresh runs, the chosen condition and plain decoding alternating, in a campaign of its own
whose file names the selection it confirms. The selection round is never reused as evidence:
the headline states the confirmation's ratio and interval."""

from __future__ import annotations

from pydantic import Field

from phase.results.base import FileName, NonNegFloat, PosInt, Sha256, Strict
from phase.results.config import Level


class Confirms(Strict):
    # The selection campaign: its id, its file's bare name and the sha256 of its bytes.
    campaign_id: str
    file: FileName
    sha256: Sha256
    # The condition chosen there, and how: the rule, how many conditions it chose among, and
    # the ratio the selection runs gave it (stated for comparison, never as the evidence).
    prompt: str
    strategy: str
    factors: dict[str, Level] = Field(default_factory=dict, exclude_if=lambda v: not v)
    rule: str
    selected_from: PosInt
    selection_speed_ratio: NonNegFloat | None

"""Which verification rule decided what a sampled run's speculative steps kept.

A sampled run is claimed equal to plain sampling in distribution, which holds for the rule
that verified its proposals, and only as that rule stood: the record names the rule and its
version, so a later change to the rule (a new version) is told apart from the runs it did not
decide. The rules themselves and which of them are exact live in phase.policy
(speculative_sampling.VERIFICATIONS); this is only what a file records.

Absent (None) on greedy runs, which verify by argmax and are compared with plain token by
token, on plain sampled runs, which propose nothing, and on sampled runs written before
phase recorded it: there the rule is unrecorded (phase validate says so; the campaigns of
that time verified every proposal by rejection sampling, phase.decode.sampled_timed).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from phase.results.base import PosInt, Strict

RuleName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", max_length=64)]


class Verification(Strict):
    name: RuleName
    version: PosInt

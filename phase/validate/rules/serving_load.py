"""A serving run's load as config.serving declares it (part of rule `serving`): its seed is
the one config.serving.order_seed's rule gives (phase.results.levels.serving_seed) and its
requests' prompts are the ones that seed's order draws (phase.serving.load.draw_order); a
closed loop admits each request as its client sends it (arrival is admission); an open loop's
requests arrive at the seeded Poisson times its rate and the run's seed give
(phase.serving.load.arrival_offsets, recomputed here) and are admitted no earlier; and
neither ever serves more requests at once than the run's concurrency level.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from phase.results import CampaignConfig, Run
from phase.results.levels import serving_seed
from phase.results.serving import ServingConfig, ServingRun
from phase.serving.load import arrival_offsets, draw_order
from phase.validate.registry import Helper

Problem = tuple[str, str]  # (message, JSON path below the run)
# Clock readings are seconds from the run's start, written as floats: an arrival the load
# generator scheduled at `start + t` reads back as t to within rounding.
_TOLERANCE_S = 1e-6


def load_problems(config: ServingConfig, serving: ServingRun) -> Iterator[Problem]:
    yield from (_open(config, serving) if config.load == "open" else _closed(serving))
    yield from _cap(serving)


def order_problems(config: CampaignConfig, run: Run, serving: ServingRun) -> Iterator[Problem]:
    """The run's seed is the one config.serving.order_seed's rule gives it, and each request's
    prompt is the one the seeded order draws from config.prompts: the load can be served
    again from the file alone. The first wrong prompt is named, not every one after it."""
    expected = serving_seed(config, run.rerun_of or run.id, run.repeat, run.factors)
    if serving.seed != expected:
        rule = ("its repeat and levels" if config.serving is not None
                and config.serving.order_seed == "load" else "its run id")
        yield (f"seed is {serving.seed}, but the order seed rule (config.serving.order_seed: "
               f"by {rule}) gives {expected}: its requests cannot be drawn again from the file",
               ".serving.seed")
        return
    names = [p.name for p in config.prompts]
    order = draw_order(len(names), len(serving.requests), serving.seed)
    for j, r in enumerate(serving.requests):
        if r.id < len(order) and r.prompt != names[order[r.id]]:
            yield (f"prompt is {r.prompt!r}, but the order seeded by {serving.seed} draws "
                   f"{names[order[r.id]]!r} for request {r.id} from config.prompts",
                   f".serving.requests[{j}].prompt")
            return


def _closed(serving: ServingRun) -> Iterator[Problem]:
    for j, r in enumerate(serving.requests):
        if not math.isclose(r.arrival_s, r.admission_s, abs_tol=_TOLERANCE_S):
            yield (f"arrival_s is {r.arrival_s} but admission_s is {r.admission_s}: in a "
                   "closed loop a request arrives as it is admitted",
                   f".serving.requests[{j}].arrival_s")


def _open(config: ServingConfig, serving: ServingRun) -> Iterator[Problem]:
    scheduled = arrival_offsets(config.request_rate, config.requests, serving.seed)
    for j, r in enumerate(serving.requests):
        if r.id < len(scheduled) and not math.isclose(r.arrival_s, scheduled[r.id],
                                                      abs_tol=_TOLERANCE_S):
            yield (f"arrival_s is {r.arrival_s} but the seeded arrivals at "
                   f"{config.request_rate:g}/s (seed {serving.seed}) put request {r.id} at "
                   f"{scheduled[r.id]}", f".serving.requests[{j}].arrival_s")
        if r.admission_s < r.arrival_s - _TOLERANCE_S:
            yield (f"admission_s is {r.admission_s}, before the request arrived at "
                   f"{r.arrival_s}", f".serving.requests[{j}].admission_s")


def _cap(serving: ServingRun) -> Iterator[Problem]:
    """At most `concurrency` requests between admission and finish at any instant (a
    request's slot is freed at its finish, before the next is admitted; an admission within
    the clock's rounding of a finish counts as after it)."""
    events = sorted([(r.admission_s, 1) for r in serving.requests]
                    + [(r.finish_s - _TOLERANCE_S, -1) for r in serving.requests])
    active = most = 0
    for _, change in events:  # at equal times the finish (-1) sorts first
        active += change
        most = max(most, active)
    if most > serving.concurrency:
        yield (f"{most} requests were in flight at once, more than the run's concurrency "
               f"of {serving.concurrency}", ".serving.requests")


RULE = Helper("the serving rule's check of a run's load against config.serving")

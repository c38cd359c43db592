"""Speculation under load: plain vs draft-4 vs n-gram vs `auto` when many requests are decoded
together (continuous batching in phase's own loop), at closed-loop concurrency 1, 2, 4 and 8.

    python experiments/serving.py results/NAME.json
    phase measure serving -o results/NAME.json      # the same command
    phase measure serving --quick -o results/quick/NAME.json

Every run is one closed-loop load (phase.campaign.serving_run): `serving_requests` requests
drawn in a seeded order from the workload's prompts, `concurrency` of them decoded at once,
recorded with every request's latencies and the run's serving windows (Run.serving). This
file only declares the plan; `phase.cli.measure` parses the options and runs it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run as a script from a checkout without installing

if __name__ == "__main__":  # loaded as `phase measure` loads it: a bad declaration is one line
    from phase.cli.measure import run_file

    run_file(__file__)

from phase.analysis.rules import Crossover, Question, Titles  # noqa: E402
from phase.campaign import DEFAULT_PLAN, Experiment, Factor  # noqa: E402
from phase.models.sources import DEFAULT_DRAFT, DEFAULT_TARGET, TEST_MODEL  # noqa: E402

# The 16 shortest HumanEval prompts by characters (ties by id): short prompts keep 8
# requests of prompt + 32 tokens well inside one shared context, and a run's cost in
# generation rather than prefill, which is where speculation acts.
SHORTEST_HUMANEVAL = (
    "humaneval-53", "humaneval-55", "humaneval-23", "humaneval-45", "humaneval-34",
    "humaneval-83", "humaneval-85", "humaneval-47", "humaneval-24", "humaneval-27",
    "humaneval-35", "humaneval-59", "humaneval-14", "humaneval-42", "humaneval-131",
    "humaneval-28",
)

# Set on each plan, not on the Experiment (which would give the quick plan the same levels).
CONCURRENCY = Factor("concurrency", "concurrency", (1, 2, 4, 8))

PLAN = replace(
    DEFAULT_PLAN,
    target=DEFAULT_TARGET,
    draft=DEFAULT_DRAFT,
    workload="humaneval",
    prompts=SHORTEST_HUMANEVAL,
    strategies=("plain", "draft-4", "ngram", "auto"),
    tokens=32,
    # Three: with two, a ratio's t interval has one degree of freedom and resolves nothing
    # (the first campaign, published/serving-x86-64-2c/v1).
    repeats=3,
    serving_requests=20,
    factors=(CONCURRENCY,),
    # Each repeat runs one concurrency level's strategies back to back: shuffled whole, a
    # repeat of 16 runs put a ratio's two runs up to 15 min apart, and this machine's pace
    # drifts by several percent over that (campaign 4's C = 8 prefill gap of ~3%, which a
    # same-process alternated test did not reproduce).
    blocked_by="concurrency",
)

# The note's title and finding are this rule's outcome (phase.analysis.rules.crossover): per
# strategy, the lowest concurrency whose throughput ratio to plain has a 95% interval
# (corrected over the campaign's ratios) that includes or falls below 1.0; energy per request
# is read alike where a sensor measured it; auto is held to 0.98x the better of plain and the
# best fixed proposer at every concurrency.
QUESTION = Question(
    text=("As more requests are decoded together, does each speculative strategy keep beating "
          "plain decoding's aggregate throughput, and from which concurrency on does it stop?"),
    rule=Crossover(auto_floor=0.98),
    titles=Titles(
        yes="Speculation keeps beating plain decoding at every load on {host_class}",
        no="Speculation does not beat plain decoding at any load on {host_class}",
        partly="Speculation stops paying as load grows on {host_class}",
        unresolved="Speculation under load on {host_class}: where it stops paying is not "
                   "resolved",
    ),
)

EXPERIMENT = Experiment(
    name="serving",
    note="speculation-under-load",
    description=(
        "Serving campaign: each strategy × closed-loop concurrency serves HumanEval "
        "requests in a seeded order, the same load for every strategy of a repeat and level, "
        "decoded together with continuous batching, each repeat one concurrency level's "
        "strategies back to back (levels and strategies shuffled), greedy, every energy "
        "sensor sampled."
    ),
    prompts_dir=HERE / "prompts",
    plan=PLAN,
    question=QUESTION,
    # Seconds end to end: the small test model drafts for itself, two levels, one repeat.
    # The four shortest prompts: every prompt of the pool is first decoded as a plain
    # reference (the 16 took a sixth of the smoke campaign) and prefill is most of a serving
    # run's time on a CPU; five requests over four prompts make every run serve one twice.
    quick=replace(
        PLAN,
        target=TEST_MODEL,
        prompts=SHORTEST_HUMANEVAL[:4],
        draft=TEST_MODEL,
        tokens=8,
        repeats=1,
        serving_requests=5,
        factors=(Factor("concurrency", "concurrency", (1, 2)),),
        cooldown_s=0.2,
        idle_window_s=0.2,
        profile_blocks=2,
        profile_min_block_s=0.02,
        max_reruns=0,
        quiet_check_s=0.5,
    ),
)

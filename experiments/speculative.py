"""Speculative decoding: plain vs draft-k vs n-gram copying vs `auto`, on speed, acceptance
and energy; every campaign first measures its cost profile.

    python experiments/speculative.py results/NAME.json
    phase measure speculative -o results/NAME.json      # the same command

Three prompts (experiments/prompts/): new code, prose, and an edit of
experiments/speculative_edit_input.py whose answer mostly repeats the input. This file only
declares the plan; `phase.cli.measure` parses the options and runs it.
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

from phase.analysis.rules import BeatsPlain, Question, Titles  # noqa: E402
from phase.campaign import DEFAULT_PLAN, Experiment  # noqa: E402
from phase.models.sources import DEFAULT_DRAFT, DEFAULT_TARGET, TEST_MODEL  # noqa: E402

PLAN = replace(
    DEFAULT_PLAN,
    target=DEFAULT_TARGET,
    draft=DEFAULT_DRAFT,
    prompts=("code", "prose", "edit"),
    strategies=("plain", "draft-2", "draft-4", "draft-8", "draft-16", "ngram", "auto"),
    # Three repeats cannot resolve a 5% effect on a machine whose identical runs spread by
    # 17-40%: after them, a condition whose ratio to plain is not yet known within ±5% is
    # repeated (with plain) until it is, or until as many extra runs as the plan's own
    # (at most twice the runs) or an hour of them are spent. `--repeats N`: fixed design.
    target_half_width=0.05,
    extra_runs=None,
    extra_time_s=3600.0,
)

# The note's title and headline are this rule's outcome (phase.analysis.rules.speed): a ratio
# differs from plain only where its 95% interval excludes `against`.
QUESTION = Question(
    text=("Per prompt, is any speculative strategy faster than plain greedy decoding, and does it "
          "use less chip energy per token?"),
    rule=BeatsPlain(against=1.0),
    titles=Titles(
        yes="Speculative decoding beats plain decoding on every prompt on {host_class}",
        no="Speculative decoding does not beat plain decoding on {host_class}",
        partly="Speculative decoding beats plain decoding on some prompts on {host_class}",
        unresolved=("Speculative decoding on {host_class}: faster than plain decoding? "
                    "Not resolved"),
    ),
)

EXPERIMENT = Experiment(
    name="speculative",
    note="speculative-decoding-cpu",
    description=(
        "Speculative decoding campaign: every prompt × strategy, repeated in a freshly "
        "shuffled order, greedy, a fixed number of generated tokens, every energy sensor sampled."
    ),
    prompts_dir=HERE / "prompts",
    plan=PLAN,
    question=QUESTION,
    # A few minutes end to end: the small test model drafts for itself.
    quick=replace(
        PLAN,
        target=TEST_MODEL,
        draft=TEST_MODEL,
        tokens=48,
        repeats=2,
        strategies=("plain", "draft-4", "ngram", "auto"),
        cooldown_s=0.2,
        idle_window_s=0.2,
        profile_blocks=2,
        profile_min_block_s=0.02,
        # A smoke test is never published, but its summary must not call a disturbed run
        # valid: judge every run (load and slowdown) and leave the disturbed ones out, but
        # re-run nothing (its run count stays the plan's on a busy machine).
        max_reruns=0,
        quiet_check_s=0.5,
        # A smoke test: the fixed design, whatever its run-to-run spread.
        target_half_width=None,
    ),
)

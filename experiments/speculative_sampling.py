"""Speculative decoding when sampling: plain vs draft-4 vs n-gram vs `auto` at temperatures
0, 0.3, 0.7 and 1.0, on speed, acceptance and energy. Temperature 0 is greedy decoding (the
speculative study's timed loops, unchanged): those rows are the greedy baseline the sampled
ones are compared with. Above 0 every run samples with llama.cpp's default truncation
(top-k 40, top-p 0.95, min-p 0.05) and its own seed, derived from the campaign's seed and
the run's id (recorded per run), and every proposal is verified by rejection sampling, which
keeps the target's distribution exactly (tests/test_sampling_exact.py).

    python experiments/speculative_sampling.py results/NAME.json
    phase measure speculative_sampling -o results/NAME.json      # the same command

Time on the 2-core x86_64 machine (1.5B target, 0.5B draft), from the greedy study's
campaign there (results/speculative-x86_64-2c-2026-11-30-2.json: plain ~8.5 tokens/s; prefill
0.9 s for code, 0.75 s for prose, 10.4 s for the 914-token edit prompt, 15.7 s with the draft
model too): per temperature and repeat, 12 runs cost ~60 s of prefill (the edit prompt's is
52 s of it), ~45 s of decoding at 32 tokens and 12 s of cooldown and idle sampling, ~2 min;
x 4 temperatures x 3 repeats = 144 runs in ~24 minutes, plus ~2 minutes of cost profile
and plain references. Tokens are cut from the study's 128 to 32 to stay there, and the
cooldown and idle window to 0.5 s each; sampled runs vary by seed as well as by machine
noise, so 3 repeats are what this budget affords, not what tight intervals would need.
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
from phase.campaign import DEFAULT_PLAN, Experiment, Factor  # noqa: E402
from phase.models.sources import DEFAULT_DRAFT, DEFAULT_TARGET, TEST_MODEL  # noqa: E402

TEMPERATURE = Factor("temperature", "temperature", (0, 0.3, 0.7, 1.0))

PLAN = replace(
    DEFAULT_PLAN,
    target=DEFAULT_TARGET,
    draft=DEFAULT_DRAFT,
    prompts=("code", "prose", "edit"),
    strategies=("plain", "draft-4", "ngram", "auto"),
    tokens=32,
    repeats=3,
    cooldown_s=0.5,
    idle_window_s=0.5,
    target_half_width=None,
    # llama.cpp's defaults (common_params_sampling): top-k 40, top-p 0.95, min-p 0.05.
    sample_top_k=40,
    sample_top_p=0.95,
    sample_min_p=0.05,
)

# The note's title and headline are this rule's outcome (phase.analysis.rules.speed): a ratio
# differs from plain only where its 95% interval excludes `against`.
QUESTION = Question(
    text=("Per prompt and temperature, is any speculative strategy faster than plain decoding "
          "when sampling, and does it use less chip energy per token?"),
    rule=BeatsPlain(against=1.0),
    titles=Titles(
        yes="Speculative decoding when sampling beats plain decoding everywhere on {host_class}",
        no="Speculative decoding when sampling does not beat plain decoding on {host_class}",
        partly=("Speculative decoding when sampling beats plain decoding in some conditions "
                "on {host_class}"),
        unresolved=("Speculative decoding when sampling on {host_class}: faster than plain "
                    "decoding? Not resolved"),
    ),
)

EXPERIMENT = Experiment(
    name="speculative_sampling",
    note="speculative-decoding-sampling",
    description=(
        "Speculative decoding when sampling: every prompt x strategy x temperature, repeated "
        "in a freshly shuffled order, a fixed number of generated tokens, seeds recorded, "
        "every energy sensor sampled."
    ),
    prompts_dir=HERE / "prompts",
    plan=PLAN,
    question=QUESTION,
    # Seconds: the small test model drafts for itself, one prompt.
    quick=replace(
        PLAN,
        target=TEST_MODEL,
        draft=TEST_MODEL,
        prompts=("code",),
        tokens=16,
        repeats=2,
        cooldown_s=0.0,
        idle_window_s=0.1,
        profile_blocks=2,
        profile_min_block_s=0.02,
        max_reruns=0,
        quiet_check_s=0.5,
    ),
    factors=(TEMPERATURE,),
)

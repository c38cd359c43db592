"""Is decode memory-bound? Plain decoding of one short prompt with the same model stored in
eight GGUF formats, plus the larger target as shipped, at each thread count and two context
fills; per condition tokens/s, the bytes a generated token reads (an estimate from the GGUF
header), the effective bandwidth that implies and its share of the machine's own measured
memory bandwidth at the same thread count.

    python experiments/memory_bound.py results/NAME.json
    phase measure memory_bound -o results/NAME.json      # the same command
    make measure EXPERIMENT=memory_bound                 # (QUICK=1: the test model, < 1 min)

The formats are llama.cpp's quantizer's re-stores of the shipped 0.5B Q4_K_M file
(`variant:qwen2.5-coder-0.5b:FORMAT`, derived once and cached, never shipped): going up
(Q8_0, F16) stores the same weight values in more bytes, which isolates the variable under
test. Thread levels are 1, 2, 4, ... up to and including every CPU this process may use
(1 and 2 on a 2-core machine), worked out when the file is loaded.
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

from phase.analysis.rules import MemoryBound, Question, Titles  # noqa: E402
from phase.campaign import DEFAULT_PLAN, Experiment, Factor  # noqa: E402
from phase.decode.cores import usable_cpus  # noqa: E402
from phase.models.sources import DEFAULT_DRAFT, DEFAULT_TARGET, TEST_MODEL  # noqa: E402

SMALL = DEFAULT_DRAFT  # qwen2.5-coder-0.5b, shipped as Q4_K_M
FORMATS = ("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K")
SHIPPED = "Q4_K_M"
FILL = 2048


def _model_factor(source: str, formats: tuple[str, ...], shipped: str,
                  extra: tuple[tuple[str, str], ...] = ()) -> Factor:
    """One level per format of `source` (its shipped format as the file itself), then `extra`
    (spec, label) levels; labels are the format names, which the note groups by."""
    specs = tuple(source if f == shipped else f"variant:{source}:{f}" for f in formats)
    return Factor("format", "model", specs + tuple(s for s, _ in extra),
                  labels=formats + tuple(label for _, label in extra))


def _thread_levels(cpus: int) -> tuple[int, ...]:
    levels = [1]
    while levels[-1] * 2 < cpus:
        levels.append(levels[-1] * 2)
    return tuple(sorted({*levels, cpus}))


PLAN = replace(
    DEFAULT_PLAN,
    target=SMALL,
    draft=None,
    prompts=("code",),
    strategies=("plain",),
    tokens=32,
    repeats=2,
    target_half_width=None,  # a fixed design: each condition's median of its repeats
    profile=False,  # the cost profile is for speculative strategies; this study has none
    measure_bandwidth=True,
    factors=(
        _model_factor(SMALL, FORMATS, SHIPPED, ((DEFAULT_TARGET, "1.5B.Q4_K_M"),)),
        Factor("threads", "threads", _thread_levels(usable_cpus())),
        # 2048 tokens of the prompt repeated before it, so KV-cache reads show in bytes/token
        # (about 6% of the 0.5B Q4_K_M's weights). Its prefill is most of the campaign's
        # time on 2 cores; 1024 would take about a third off it.
        Factor("fill", "context_fill", (0, FILL)),
    ),
)

# What the note concludes is computed from these thresholds (phase.analysis.rules.memory);
# each test is decided only where its 95% interval lies wholly inside or outside them.
QUESTION = Question(
    text=("Is decoding limited by reading memory: does tokens/s follow the bytes a token "
          "reads, near the bandwidth the machine can stream?"),
    rule=MemoryBound(
        # Decode reads the weights once per token in long streams, as STREAM's kernels read
        # their arrays: a memory-bound decode should reach most of what they measure; 60%
        # leaves room for the KV reads and the compute between them.
        share=0.60,
        # tokens/s ∝ (bytes per token)^slope; memory-bound is -1. Over the formats' 3x range
        # of bytes, a slope of -0.75 misses proportional speed by about a third at the ends.
        slope_band=0.25,
        # 1 -> 2 threads: memory-bound speed rises as the measured bandwidth does. STREAM's
        # repeats on this machine spread by several percent, so 10% either way.
        threads_band=0.10,
        # An empty -> filled context: memory-bound speed falls as the bytes per token rise.
        fill_band=0.15,
    ),
    titles=Titles(
        yes="Decode is memory-bound on {host_class}",
        no="Decode is not memory-bound on {host_class}",
        partly="Decode on {host_class} is partly memory-bound",
        unresolved="Is decode memory-bound on {host_class}? Not resolved",
    ),
)

EXPERIMENT = Experiment(
    name="memory_bound",
    note="decode-memory-bound",
    description=(
        "Memory-bound decoding: plain decoding of one prompt with one model in eight storage "
        "formats (and the larger target), at each thread count and two context fills, against "
        "the machine's measured memory bandwidth."
    ),
    prompts_dir=HERE / "prompts",
    plan=PLAN,
    question=QUESTION,
    # Well under a minute: the test model in its shipped format and one variant, one thread.
    quick=replace(
        PLAN,
        target=TEST_MODEL,
        tokens=16,
        repeats=2,
        cooldown_s=0.0,
        idle_window_s=0.0,
        max_reruns=0,
        quiet_check_s=0.5,
        bandwidth_repeats=2,
        bandwidth_array_bytes=64 << 20,
        factors=(
            _model_factor(TEST_MODEL, ("Q8_0", "Q4_1"), "Q4_1"),
            Factor("threads", "threads", (1,)),
            Factor("fill", "context_fill", (0, 64)),
        ),
    ),
)

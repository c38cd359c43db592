"""The prefill-occupancy section (bench/prefill_occupancy.py) at its --quick sizes on the real
test model: while the prompt is timed, the cache holds the other requests the arm names."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import prefill_occupancy
from phase.decode.native import ContextOptions, NativeModel


@pytest.mark.model
def test_each_arm_times_the_prompt_beside_as_many_requests_as_it_names(
        test_model_path: Path) -> None:
    sizes = prefill_occupancy.QUICK
    options = ContextOptions(n_ctx=512, n_threads=1, n_threads_batch=1,
                             n_seq_max=prefill_occupancy.SEQUENCES)
    model = NativeModel(test_model_path, options)
    try:
        last = prefill_occupancy.SEQUENCES - 1
        for others in (7, 3, 0):
            seconds = prefill_occupancy._arm(model, others, sizes)()
            assert seconds > 0.0
            held = [model.seq_positions(s) for s in range(last)]
            # Arms run in any order: each clears what an earlier one left.
            assert held == [sizes.other_cells] * others + [0] * (last - others)
            assert model.seq_positions(last) == sizes.prompt_tokens
    finally:
        model.close()

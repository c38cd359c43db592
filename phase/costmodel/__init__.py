"""The cost model of speculative decoding: what a pass costs, and what a step yields.

    curve       measured pass costs -> curves in batch size and KV fill; CostTable per run
    acceptance  expected tokens per step: i.i.d. (Leviathan et al. 2023) or by position
    predict     a run's predicted cost from its steps; a strategy's from acceptance alone
    breakeven   the acceptance above which a proposer with k tokens beats plain decoding

Pure functions of a results file's profile and runs. It sits below `decode` (whose `auto`
strategy decides with the same curves) and above `results`.
"""

from phase.costmodel.acceptance import (
    PositionRates,
    expected_tokens,
    iid_expected_tokens,
    merge,
    position_rates,
)
from phase.costmodel.curve import (
    OBJECTIVES,
    CostTable,
    Curve,
    NoCost,
    Objective,
    cost_table,
    energy_sensors,
)

__all__ = [
    "OBJECTIVES",
    "CostTable",
    "Curve",
    "NoCost",
    "Objective",
    "PositionRates",
    "cost_table",
    "energy_sensors",
    "expected_tokens",
    "iid_expected_tokens",
    "merge",
    "position_rates",
]

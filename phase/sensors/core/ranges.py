"""What a raw reading can be on a real machine: never infinite or NaN, a counter or a power
never negative, a kernel counter within 64 bits, a power below what any chip, board or socket
draws (a current or voltage a shunt monitor reports is signed: a rail at rest reads a few mA
either side of 0). A reading outside its range makes its sensor unreadable (with this
reason), never a number in a sum."""

from __future__ import annotations

import math
from typing import Any

U64 = 2**64
# 100 kW: more than any chip, board or wall socket phase reads draws.
MAX_POWER_W = 1e5


def reading_problem(value: Any, high: float = math.inf, low: float = 0.0) -> str | None:
    """Why `value` cannot be a raw reading from `low` (0: a counter or a power is never
    negative) to `high` (and below 2**64 in size), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r} is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not finite"
    if value < low and low == 0:
        return f"{value!r} is negative"
    if value < low or value > high or abs(value) >= U64:
        return (f"{value!r} is out of range ({low:.4g} to {min(high, U64 - 1):.4g})")
    return None

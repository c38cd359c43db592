"""Every threshold the rules use, in one frozen object recorded in each report and page."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from phase.errors import UsageProblem

SCOPES = ("chip", "module", "board", "wall")


@dataclass(frozen=True)
class RuleSettings:
    """Every threshold the rules use; recorded in each report and on each page."""

    variance_max: float = 0.05
    lag_bias_max: float = 0.05
    confound_r: float = 0.5
    confound_min_runs: int = 6
    # Fewer usable chip energies than this and the variance rule falls back to tokens/s.
    variance_min_runs: int = 2
    # Expected repeats per condition; None means the file's own config.repeats.
    repeats: int | None = None
    # Name of the sensor that "chip energy" means; None means the documented automatic choice.
    chip_sensor: str | None = None
    enclosing_scopes: tuple[str, ...] = ("module", "board", "wall")
    # Two sensors' windows count as "the same window" when both edges agree within this;
    # otherwise an enclosing-vs-chip comparison uses mean power over each window instead.
    window_match_s: float = 0.01
    # Largest (max - min) / mean of per-host means of one condition in a merged campaign.
    host_spread_max: float = 0.05

    def __post_init__(self) -> None:
        for name in ("variance_max", "lag_bias_max", "window_match_s", "host_spread_max"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise UsageProblem(f"rule setting {name} must be a finite number >= 0, not {value}")
        if not 0 <= self.confound_r <= 1:
            raise UsageProblem(f"rule setting confound_r must be in [0, 1], not {self.confound_r}")
        if self.confound_min_runs < 3:
            # Pearson r over two points is always +-1: the rule would reject on noise.
            raise UsageProblem(
                f"rule setting confound_min_runs must be >= 3, not {self.confound_min_runs}"
            )
        if self.variance_min_runs < 2:
            raise UsageProblem(
                f"rule setting variance_min_runs must be >= 2, not {self.variance_min_runs}"
            )
        if self.repeats is not None and self.repeats < 1:
            raise UsageProblem(f"rule setting repeats must be >= 1, not {self.repeats}")
        unknown = [s for s in self.enclosing_scopes if s not in SCOPES or s == "chip"]
        if unknown:
            raise UsageProblem(
                f"rule setting enclosing_scopes: {', '.join(unknown)} is not module, board or wall"
            )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["enclosing_scopes"] = list(self.enclosing_scopes)
        return out


DEFAULT_SETTINGS = RuleSettings()

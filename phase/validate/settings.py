"""Every threshold the rules use, in one frozen object recorded in each report and page."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from phase.base.errors import UsageProblem

SCOPES = ("chip", "module", "board", "wall")

# Sensor backends whose readings may be published: the real backends of phase.sensors (a test
# checks that every one of them is listed). Anything else -- a test fixture, a simulated
# sensor, a backend this phase does not know -- blocks publishing.
PUBLISHABLE_BACKENDS = (
    "rapl", "nvml", "jetson-ina3221", "apple", "zeus", "powermetrics", "meter",
    "amd_energy", "amdgpu", "amdsmi", "intel_gpu",
)

# Power a sensor of each scope cannot exceed when it declares no maximum of its own: above
# any single accelerator (chip), memory module set (module), one machine's board, or one
# wall socket circuit group (wall). Generous on purpose: they catch unit errors (mW read as
# W, a counter wrap taken as energy), not merely high readings.
DEFAULT_MAX_POWER_W = {"chip": 1500.0, "module": 500.0, "board": 5000.0, "wall": 20000.0}

# Mean power below which a sensor is taken as not updating while tokens were being produced.
# A chip doing nothing reads milliwatts (an idle Apple ANE); a board or wall meter on a
# running machine reads watts. Far below anything that decodes a token.
DEFAULT_MIN_POWER_W = {"chip": 0.001, "module": 0.001, "board": 0.1, "wall": 0.5}

# The smallest step each backend's counter can show: an advance of at most one step over a
# window in which tokens were produced is a counter that did not update. RAPL counts in units
# of 2^-14 J (61 us) on most Intel parts (finer on AMD and some Intel); NVML and Apple's
# IOReport in mJ. `default` covers a backend not listed.
DEFAULT_COUNTER_RESOLUTION_J = {
    "rapl": 2.0**-14, "nvml": 1e-3, "apple": 1e-3, "zeus": 1e-3, "default": 1e-3,
}


@dataclass(frozen=True)
class RuleSettings:
    """Every threshold the rules use; recorded in each report and on each page."""

    variance_max: float = 0.05
    lag_bias_max: float = 0.05
    # A window counts as long enough for its sensor's lag when b(T + tolerance) is within
    # lag_bias_max: timestamps are Unix floats (about 0.2 us apart at today's dates) read from
    # a clock that is not exact either, so an intended 20 s window may be stored as
    # 19.9999998 s; the verdict must not hang on that. 1 ms moves b by about 1e-4 of itself.
    lag_window_tolerance_s: float = 0.001
    confound_r: float = 0.5
    confound_min_runs: int = 6
    # The lag-confound rule rejects only when the lag it detects would under-read the shortest
    # window by at least this share of that window's enclosing power: a trend too small to
    # matter is noise, not a confound.
    confound_min_under_read: float = 0.01
    # Fewer usable chip energies than this and the variance rule judges tokens/s alone.
    variance_min_runs: int = 2
    # Expected repeats per condition; None means the file's own config.repeats.
    repeats: int | None = None
    # Name of the sensor that "chip energy" means; None means the documented automatic choice.
    chip_sensor: str | None = None
    # Two sensors' windows count as "the same window" when both edges agree within this;
    # otherwise an enclosing-vs-enclosed comparison uses mean power over each window instead.
    window_match_s: float = 0.01
    # A divergence from plain decoding is a near-tie (numerics) when both passes' gaps between
    # their two best logits are below this; otherwise it is a mismatch (a decoder bug). A flip
    # by numerics needs the margin between the two tokens to move by at least the sum of the
    # gaps; llama.cpp's one-token and batched passes over the same tokens move it by a few
    # tenths of a logit on the test model, enough that 0.1 called such flips mismatches
    # (figures: bench/results/notes-from-docstrings.md). 0.5 covers that;
    # bench/batch_noise.py measures a model's own.
    near_tie_gap: float = 0.5
    # Slack for run timing identities (prefill + decode within the run's wall-clock span).
    clock_tolerance_s: float = 0.05
    publishable_backends: tuple[str, ...] = PUBLISHABLE_BACKENDS
    max_power_w: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MAX_POWER_W))
    min_power_w: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIN_POWER_W))
    counter_resolution_j: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_COUNTER_RESOLUTION_J)
    )

    # Largest (max - min) / mean of per-host means of one condition in a merged campaign.
    host_spread_max: float = 0.05

    def __post_init__(self) -> None:
        for name in ("variance_max", "lag_bias_max", "window_match_s", "lag_window_tolerance_s",
                     "confound_min_under_read", "near_tie_gap", "clock_tolerance_s",
                     "host_spread_max"):
            _non_negative(name, getattr(self, name))
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
        for name in ("max_power_w", "min_power_w"):
            table = getattr(self, name)
            missing = [s for s in SCOPES if s not in table]
            if missing:
                raise UsageProblem(f"rule setting {name} has no value for {', '.join(missing)}")
            for scope, value in table.items():
                _non_negative(f"{name}[{scope}]", value)
        if "default" not in self.counter_resolution_j:
            raise UsageProblem("rule setting counter_resolution_j needs a 'default' entry")
        for backend, value in self.counter_resolution_j.items():
            _non_negative(f"counter_resolution_j[{backend}]", value)

    def resolution_j(self, backend: str) -> float:
        """The smallest step a counter of this backend shows."""
        return self.counter_resolution_j.get(backend, self.counter_resolution_j["default"])

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["publishable_backends"] = list(self.publishable_backends)
        return out


def _non_negative(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise UsageProblem(f"rule setting {name} must be a finite number >= 0, not {value}")


DEFAULT_SETTINGS = RuleSettings()

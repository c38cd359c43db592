"""A memory study's bandwidth record: this machine's memory bandwidth, measured by phase's
STREAM-style kernels (phase.bandwidth) at each thread count the campaign decoded with, so
that a condition's effective bandwidth (bytes/token x tokens/s) is compared with what the
same number of threads can stream here.

Measured after the runs, once per file (a resumed campaign that has it keeps it), quietly:
the observer hears one line per kernel and thread count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phase.bandwidth.stream import KERNELS, measure
from phase.campaign.factors import Factor
from phase.results import BandwidthMeasurement


def thread_counts(factors: Sequence[Factor], default: int) -> list[int]:
    """The threads factor's levels, ascending; else the count every run used."""
    for factor in factors:
        if factor.kind == "threads":
            return sorted({int(level) for level in factor.levels})
    return [default]


def measure_bandwidth(factors: Sequence[Factor], default_threads: int, repeats: int,
                      array_bytes: int | None, say: Callable[[str], None]
                      ) -> list[BandwidthMeasurement]:
    """Copy and triad at each thread count, as the results file records them."""
    out = []
    for threads in thread_counts(factors, default_threads):
        for kernel in KERNELS:
            rec = measure(kernel, threads, repeats, array_bytes)
            say(f"memory bandwidth: {kernel}, {threads} thread(s): best {rec.best_gb_s:.1f} "
                f"GB/s, median {rec.median_gb_s:.1f} GB/s")
            out.append(BandwidthMeasurement(
                kernel=rec.kernel, threads=rec.threads,  # type: ignore[arg-type]  # str kernel: pydantic checks the Literal
                array_bytes=rec.array_bytes, repeats=rec.repeats,
                bytes_per_pass=rec.bytes_per_pass, best_gb_s=rec.best_gb_s,
                median_gb_s=rec.median_gb_s, times_s=list(rec.times_s),
                llc_bytes=rec.llc_bytes, meets_llc_rule=rec.meets_llc_rule,
                write_allocate_counted=rec.write_allocate_counted, method=rec.method,
                measured="after"))
    return out

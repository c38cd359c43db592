"""The benchmark sections, each registered once: its name, what it measures, how it runs
(the function of which bench module, and what it needs before it starts), in the order
bench/run.py runs them.

Every section's output is the same shape: its function `run(ctx) -> Section` (bench/common.py)
returns rows that bench/run.py writes under the section's name into
bench/results/<date>-<host>.json and the Markdown table beside it. Adding a section: a module
with its function, one `BenchSection(...)` below. Nothing else names it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from bench.common import Context, Section


@dataclass(frozen=True)
class BenchSection:
    """One section. `module:function` runs it; the flags say what bench/run.py prepares
    first: the native llama.cpp build (bench/native.py), the native tools
    (bench/native_tools.py), llama-server (bench/server_build.py), the target model, the
    draft model as well."""

    name: str
    measures: str
    module: str
    function: str = "run"
    native: bool = False
    tools: bool = False
    server: bool = False
    model: bool = True
    draft: bool = False

    def runner(self) -> Callable[[Context], Section]:
        """The section's function, imported now (bench modules load llama.cpp)."""
        return getattr(importlib.import_module(f"bench.{self.module}"), self.function)


SECTIONS: tuple[BenchSection, ...] = (
    BenchSection("plain", "plain decoding's speed, phase vs native llama.cpp", "decode_bench",
                 "run_plain", native=True),
    BenchSection("draft", "draft-k speculation's speed, phase vs native llama.cpp",
                 "decode_bench", "run_draft", native=True, draft=True),
    BenchSection("ngram", "n-gram speculation's speed, phase vs native llama.cpp",
                 "decode_bench", "run_ngram", native=True),
    BenchSection("auto", "auto vs the fixed strategies, with the cost model's predictions",
                 "spec_bench", "run_auto", draft=True),
    BenchSection("ngram-native", "phase's n-gram strategies vs llama.cpp's", "spec_bench",
                 "run_ngram_native", native=True, draft=True),
    BenchSection("selfdraft", "the target as its own draft: phase's acceptance against "
                 "llama-speculative-simple's", "self_draft", native=True, draft=True),
    BenchSection("evidence", "what recording the top-2 logit gaps costs", "evidence_bench"),
    BenchSection("noise", "how far one-token and batched passes move a greedy choice, against "
                 "the validator's near_tie_gap", "batch_noise"),
    BenchSection("sampler", "what the energy sampler costs a decode, at 20 and 100 Hz",
                 "sampler_bench"),
    BenchSection("sampling", "draft-4 acceptance of speculative sampling's rejection rule "
                 "against phase's implementations of the two llama.cpp tools' verification "
                 "rules, at three temperatures", "sampling_bench", draft=True),
    BenchSection("sampling-native", "the same against the tools' binaries, "
                 "llama-speculative and llama-speculative-simple", "native_sampling",
                 tools=True, draft=True),
    BenchSection("windows", "a quiet campaign's wall time with energy windows sized to the "
                 "sensor and without", "windows_bench"),
    BenchSection("bandwidth", "how close plain decoding gets to the memory bandwidth",
                 "bandwidth"),
    BenchSection("tg-bandwidth", "phase's plain decoding and llama-bench's tg as effective "
                 "bandwidth (tok/s x bytes/token), on the 0.5B model", "tg_bandwidth",
                 tools=True),
    BenchSection("stream", "phase's STREAM-style C kernels against numpy's copy and triad, "
                 "and sysbench memory where installed", "bandwidth_bench", model=False),
    BenchSection("site", "how site build time grows with the number of campaigns",
                 "site_bench", model=False),
    BenchSection("hosts", "many campaigns over many host classes: the cross-host page",
                 "hosts_bench", model=False),
    BenchSection("adaptive", "a short real campaign with adaptive repeats: the extra runs it "
                 "took to pin every ratio to plain within ±5%", "adaptive_bench", draft=True),
    BenchSection("coverage", "by simulation, how often the published ratio intervals hold "
                 "the true ratio, the false 'resolved' rate, the family-wise rate after "
                 "correction", "coverage_bench", model=False),
    BenchSection("disturbance", "a plain decode's slowdown under a CPU hog at several duty "
                 "cycles of one core, and the quiet spread (the calibration the disturbance "
                 "defaults in phase/campaign/plan.py cite)", "disturbance_bench"),
    BenchSection("serving_reference", "phase's batched decoding against llama-server -np N "
                 "with the same settings: aggregate tok/s and acceptance at concurrency 1, 2, "
                 "4, 8, plain and n-gram", "serving_reference", server=True),
    BenchSection("prefill-occupancy", "one request's prefill beside 0, 3 and 7 others in the "
                 "shared KV cache, flash attention auto and off", "prefill_occupancy"),
)

BY_NAME = {s.name: s for s in SECTIONS}

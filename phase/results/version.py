"""The results schema's version number and what each version changed.

Kept apart from schema.py so the models stay readable and the history can grow.
"""

from __future__ import annotations

from typing import Final

# Schema history (bump SCHEMA_VERSION and add a step to migrations.MIGRATIONS when the shape
# changes; the Literal of each file model's schema_version follows it, in schema.py's
# ResultsFile and summary.py's SummaryFile; the adaptive record lives in adaptive.py):
#   1 (2026-11): first version.
#   2 (2026-12): names that say what they hold: Step.draft_ms -> propose_ms (also n-gram
#                lookups), SensorTrace.value -> values (the declared sensor's unit),
#                SummaryRow.ratio_vs_plain -> energy_ratio_vs_plain.
#   3 (2026-12): optional additions only (2 -> 3 moves the number, so that an older phase
#                says "upgrade" instead of failing on an unknown field): primary energy,
#                placement, enclosures, shards and hosts, divergence evidence, cost profile.
#   4 (2026-12): config.ngram_adaptive: a bare "ngram" adapts its proposal length (a file
#                that says so must not be read by a phase that would take it as fixed).
#   5 (2026-12): PassCost.logits: how many logits rows each profiled pass computed (the
#                draft's batches now compute none, as its mirror pass does; absent: all b).
#   6 (2026-12): config.purpose, models[].test_model.
#   7 (2026-12): disturbance: Run.foreign_load (+ reason), disturbed, rerun_of;
#                config.disturbed_load, max_reruns (absent: not measured, never disturbed).
#   8 (2026-12): optional additions: energy windows sized to the sensor: Run.passes (each
#                back-to-back pass of the same decode inside one energy window),
#                config.window_min_s (+ reason), config.max_passes (absent / empty: one
#                pass, window not sized); references[].prompt_token_ids (the n-gram
#                matcher's context, so a claimed match inside the prompt can be checked),
#                sensors[].wrap_j (a counter's declared wrap range), runs[].gpu_busy_before,
#                gpu_other_processes, gpu_activity_reason (other work on the GPU).
#                SummaryRow.speed_vs_plain, cpu_vs_plain (ratios of paired repeats) and
#                intervals (each figure's bootstrap 95% interval); derived summaries now
#                hold medians of repeats, not means.
#                Adaptive repeats: config.target_half_width, extra_budget_runs,
#                extra_budget_s; ResultsFile.adaptive (absent: the fixed design).
#   9 (2026-12): primary_energy.covers: which parts of the machine the chip figure covers
#                (phase.results.covers), so hosts whose figures differ are not compared as
#                like for like; derived from the sensor names for older files.
#   10 (2026-12): experiments over factors: config.factors (extra factors: name, kind,
#                levels, labels), Run.factors and SummaryRow.factors (a run's or row's level
#                of each), references[].factors (the levels a plain reference was decoded
#                at); absent (never written) where an experiment has none.
#   11 (2026-12): optional additions: models[].variant (a model level derived by llama.cpp's
#                quantizer: its recipe and stored tensor types), models[].bytes_per_token
#                (the weights and KV-cache bytes a generated token reads, estimated from the
#                GGUF header) and ResultsFile.bandwidth (the machine's memory bandwidth,
#                measured STREAM-style with its method); absent where not asked for.
#                Sampling: factor kind temperature, config.sampling, Run.seed (absent: greedy).
#   12 (2026-12): optional additions: config.interval_method (the method adaptive rounds
#                decided by; absent: the bootstrap before it), FigureInterval.method, p_value,
#                p_adjusted (Student t intervals on log ratios, order-statistic intervals of
#                medians, the family's Benjamini-Hochberg correction); ResultsFile.confirms
#                (a confirmation campaign's selection: phase.results.confirmation);
#                provenance.cpu_flags (the CPU flags that select llama.cpp's kernels) and
#                provenance.weight_buffers (the buffer types the target's weights were loaded
#                into), so campaigns on different builds are told apart
#                (phase.analysis.comparable); absent in older files;
#                disturbance judged by slowdown: Run.speed_vs_profile,
#                speed_vs_condition, disturbed_reason; config.slow_vs_profile,
#                slow_vs_condition (absent: judged by load alone); PassCost.block_load,
#                block_disturbed (the profile's blocks that other work disturbed, repeated and
#                left out of its medians; absent: load not measured, every block counts).
#   13 (2026-12): config.workload: the workload (phase.workloads: name, source, sha256, count,
#                path) whose prompts replaced the experiment's own; absent: its prompt files.
#                Run.verification: the rule (name, version) that verified a sampled run's
#                proposals (absent: greedy, plain, or unrecorded; phase.results.verification).
#   14 (2026-12): the serving study: factor kind `concurrency`, config.serving (requests
#                per run, steady-state B, the prompt pool's name, a latency target) and
#                Run.serving (every request's clock readings, output and latencies, the
#                run's percentiles and windows: phase.results.serving); absent elsewhere.
#   15 (2026-12): ResultsFile.stated_duration: the time a campaign stated before its runs
#                (each run priced by its strategy's predicted speed, and the budgets of
#                adaptive rounds and re-runs), so what the runs took can be checked against
#                it (phase.results.duration); absent in older files.
#   16 (2026-12): config.blocked_by: the extra factor whose levels each repeat runs in blocks
#                (phase.results.schedule), so a ratio's paired runs are minutes apart;
#                absent: each repeat shuffled whole, as before.
#   17 (2026-12): config.serving.order_seed "load": each serving run's request order (and
#                arrivals) seeded by its repeat and levels, the same for every strategy there
#                (phase.results.levels.serving_seed); absent: by the run's own id, as before.
SCHEMA_VERSION: Final = 17

"""serving (blocking): a serving run's own fields recomputed from the requests it records
(the contract: phase.results.serving).

Recomputed, never trusted: the file declares config.serving exactly when it has a
concurrency factor, and only then do runs carry `serving`; the run's concurrency is its
level of that factor and its requests number config.serving.requests, ids 0..N-1 in order;
every request's output_tokens is the length of its token_ids, and the Run's tokens, prompt
tokens, drafted and accepted are the requests' sums, its token_ids theirs concatenated in
request id order (its tokens/s is the consistency rule's), its matches_plain all of theirs; each
request's TTFT (first token - arrival) and E2E (finish - arrival), and TPOT from them; the
TTFT, TPOT and E2E percentiles (numpy's linear method over the requests' values) and the
ITL's count (one per token after each request's first); the whole-run window's tokens and
finished requests (all of them); the steady-state window's bounds (the B-th and (N-B)-th
first tokens, B = min(config.serving.steady_state_b, concurrency)) and its finished
requests, or its absence where the run is too short; and energy per token / per request as
the window's energy over its tokens / requests; goodput, the requests meeting
config.serving.latency_target (absent without one). Whether each request's tokens equal plain
decoding is the equivalence rule's. A file whose serving figures disagree with its requests
would publish latencies and energies no one measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from phase.results import ResultsFile, Run
from phase.results.levels import level_of
from phase.results.serving import (
    LatencyTargetRecord,
    ServingPercentiles,
    ServingRequest,
    ServingRun,
    ServingWindow,
)
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.rules.serving_load import load_problems, order_problems
from phase.validate.settings import RuleSettings

_REL, _ABS = 1e-6, 1e-9
Problem = tuple[str, str]  # (message, JSON path below the run)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=_REL, abs_tol=_ABS)


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    config = results.config
    has_factor = any(f.kind == "concurrency" for f in config.factors)
    if has_factor != (config.serving is not None):
        out.append(ctx.finding(
            "serving", "blocking", "config.serving must be given exactly when a factor of "
            "kind 'concurrency' is declared", json_path="$.config.serving"))
        return out
    for i, run in enumerate(results.runs):
        for message, path in run_problems(results, run):
            out.append(ctx.finding("serving", "blocking", message, run=run,
                                   json_path=f"$.runs[{i}]{path}"))
    return out


def run_problems(results: ResultsFile, run: Run) -> list[Problem]:
    config, serving = results.config, run.serving
    if config.serving is None:
        return [("a serving record in a file without config.serving", ".serving")] \
            if serving is not None else []
    if serving is None:
        return [("a run of a serving campaign without its serving record", ".serving")]
    level = level_of(config, run.factors, "concurrency")
    out: list[Problem] = []
    if level != serving.concurrency:
        out.append((f"concurrency is {serving.concurrency} but the run's concurrency level is "
                    f"{level}", ".serving.concurrency"))
    if [r.id for r in serving.requests] != list(range(config.serving.requests)):
        out.append((f"requests are not ids 0..{config.serving.requests - 1} in order "
                    "(config.serving.requests)", ".serving.requests"))
    out += load_problems(config.serving, serving)
    out += order_problems(config, run, serving)
    out += _sums(run, serving)
    out += _latencies(serving)
    b = min(config.serving.steady_state_b, serving.concurrency)
    out += _windows(run, serving, b)
    out += _energy_source(results, run, serving)
    out += _goodput(serving, config.serving.latency_target)
    return out


def _energy_source(results: ResultsFile, run: Run, serving: ServingRun) -> Iterator[Problem]:
    """A window's energy is what the run's primary sensors measured, never a figure of its
    own: the whole run's is the sum of those sensors' windows around the run (None where the
    file has no primary sensor or one of them read nothing), the steady state's lies inside
    it (integrated from the same sensors' samples, so None where the whole run's is)."""
    primary = results.primary_energy
    own = {w.sensor: w.energy_j for w in run.energy}
    parts = [own.get(name) for name in primary.sensors] if primary is not None else [None]
    expected = None if any(j is None for j in parts) else sum(j for j in parts if j is not None)
    whole = serving.whole_run.energy_j
    if not _close(whole, expected):
        source = ("the file has no primary energy sensor" if primary is None else
                  f"the run's primary sensor windows ({', '.join(primary.sensors)}) give "
                  f"{expected}")
        yield (f"energy_j is {whole} but {source}", ".serving.whole_run.energy_j")
    steady = serving.steady_state
    if steady is None or steady.energy_j is None:
        return
    if whole is None or steady.energy_j > whole * (1 + 1e-9):
        yield (f"energy_j is {steady.energy_j}, but the steady state lies inside the whole run, "
               f"whose energy is {whole}", ".serving.steady_state.energy_j")


def _goodput(serving: ServingRun, target: LatencyTargetRecord | None) -> list[Problem]:
    """The requests that met the file's latency target, and those per second of the run."""
    if target is None:
        if serving.goodput_met is not None or serving.goodput_requests_per_s is not None:
            return [("goodput without a latency target ($.config.serving.latency_target)",
                     ".serving.goodput_met")]
        return []
    met = sum(1 for r in serving.requests if _meets(r, target))
    rate = met / serving.whole_run.duration_s if serving.whole_run.duration_s > 0 else None
    if serving.goodput_met != met or not _close(serving.goodput_requests_per_s, rate):
        return [(f"goodput is {serving.goodput_met} requests ({serving.goodput_requests_per_s}"
                 f"/s) but {met} requests meet the latency target ({rate}/s)",
                 ".serving.goodput_met")]
    return []


def _meets(r: ServingRequest, target: LatencyTargetRecord) -> bool:
    # As phase.serving.metrics.LatencyTarget.met_by: a one-token request meets any TPOT bound.
    if target.ttft_s is not None and (r.ttft_s is None or r.ttft_s > target.ttft_s):
        return False
    if target.tpot_s is not None and r.tpot_s is not None and r.tpot_s > target.tpot_s:
        return False
    return target.e2e_s is None or r.e2e_s <= target.e2e_s


def _sums(run: Run, serving: ServingRun) -> Iterator[Problem]:
    reqs = serving.requests
    for j, r in enumerate(reqs):
        if r.output_tokens != len(r.token_ids):
            yield (f"output_tokens is {r.output_tokens} but token_ids has {len(r.token_ids)}",
                   f".serving.requests[{j}].output_tokens")
    for name, expected in (("tokens", sum(r.output_tokens for r in reqs)),
                           ("prompt_tokens", sum(r.prompt_tokens for r in reqs)),
                           ("drafted", sum(r.proposed for r in reqs)),
                           ("accepted", sum(r.accepted for r in reqs))):
        if getattr(run, name) != expected:
            yield (f"{name} is {getattr(run, name)} but the requests' sum is {expected}",
                   f".{name}")
    if run.token_ids != [t for r in reqs for t in r.token_ids]:
        yield ("token_ids are not the requests' token_ids concatenated in request id order",
               ".token_ids")
    expected_match = all(r.matches_plain for r in reqs) \
        if all(r.matches_plain is not None for r in reqs) else None
    if run.matches_plain != expected_match:
        yield (f"matches_plain is {run.matches_plain} but the requests' make it "
               f"{expected_match}", ".matches_plain")


def _latencies(serving: ServingRun) -> Iterator[Problem]:
    ttfts, tpots, e2es = [], [], []
    for j, r in enumerate(serving.requests):
        ttft = None if r.first_token_s is None else r.first_token_s - r.arrival_s
        e2e = r.finish_s - r.arrival_s
        tpot = None if ttft is None or r.output_tokens < 2 else (e2e - ttft) / (r.output_tokens - 1)
        for name, recorded, expected in (("ttft_s", r.ttft_s, ttft), ("e2e_s", r.e2e_s, e2e),
                                         ("tpot_s", r.tpot_s, tpot)):
            if not _close(recorded, expected):
                yield (f"{name} is {recorded} but its clock readings make it {expected}",
                       f".serving.requests[{j}].{name}")
        ttfts += [ttft] if ttft is not None else []
        tpots += [tpot] if tpot is not None else []
        e2es.append(e2e)
    for name, values in (("ttft_s", ttfts), ("tpot_s", tpots), ("e2e_s", e2es)):
        yield from _percentiles(getattr(serving, name), values, f".serving.{name}")
    itl_n = sum(max(r.output_tokens - 1, 0) for r in serving.requests if r.output_tokens)
    if serving.itl_s.n != itl_n:
        yield (f"itl_s.n is {serving.itl_s.n} but the requests emitted {itl_n} tokens after "
               "their first", ".serving.itl_s.n")


def _percentiles(recorded: ServingPercentiles, values: Sequence[float],
                 path: str) -> Iterator[Problem]:
    data = np.asarray(values, dtype=float)
    if recorded.n != data.size:
        yield (f"n is {recorded.n} but the requests give {data.size} values", f"{path}.n")
        return
    expected = (None,) * 4 if data.size == 0 else (
        float(data.mean()), *(float(v) for v in np.percentile(data, [50, 90, 99],
                                                               method="linear")))
    for name, value in zip(("mean", "p50", "p90", "p99"), expected, strict=True):
        if not _close(getattr(recorded, name), value):
            yield (f"{name} is {getattr(recorded, name)} but numpy's linear method over the "
                   f"requests gives {value}", f"{path}.{name}")


def _windows(run: Run, serving: ServingRun, b: int) -> Iterator[Problem]:
    whole, reqs = serving.whole_run, serving.requests
    if whole.output_tokens != run.tokens or whole.finished_requests != len(reqs):
        yield (f"the whole run served {whole.output_tokens} tokens and {whole.finished_requests}"
               f" requests, but the run has {run.tokens} and {len(reqs)}",
               ".serving.whole_run")
    yield from _energy(whole, ".serving.whole_run")
    firsts = sorted(r.first_token_s for r in reqs if r.first_token_s is not None)
    n = len(firsts)
    bounds = (firsts[b - 1], firsts[n - b - 1]) if n - b > b else None
    steady = serving.steady_state
    if bounds is None or bounds[1] <= bounds[0]:
        if steady is not None:
            yield (f"a steady-state window, but {n} requests with B = {b} leave none",
                   ".serving.steady_state")
        return
    if steady is None:
        yield (f"no steady-state window, but {n} requests with B = {b} give "
               f"({bounds[0]:.6g}, {bounds[1]:.6g}]", ".serving.steady_state")
        return
    if not (_close(steady.start_s, bounds[0]) and _close(steady.end_s, bounds[1])):
        yield (f"the steady state is ({steady.start_s:.6g}, {steady.end_s:.6g}] but the "
               f"{b}-th and {n - b}-th first tokens give ({bounds[0]:.6g}, {bounds[1]:.6g}]",
               ".serving.steady_state")
    finished = sum(1 for r in reqs if bounds[0] < r.finish_s <= bounds[1])
    if steady.finished_requests != finished:
        yield (f"finished_requests is {steady.finished_requests} but {finished} requests "
               "finished inside the window", ".serving.steady_state.finished_requests")
    yield from _energy(steady, ".serving.steady_state")


def _energy(w: ServingWindow, path: str) -> Iterator[Problem]:
    if w.energy_j is None:
        if w.energy_per_token_j is not None or w.energy_per_request_j is not None:
            yield ("energy per token or per request without the window's energy", path)
        if not w.energy_reason:
            yield ("no energy and no reason why", f"{path}.energy_reason")
        return
    for name, count in (("energy_per_token_j", w.output_tokens),
                        ("energy_per_request_j", w.finished_requests)):
        expected = w.energy_j / count if count else None
        if not _close(getattr(w, name), expected):
            yield (f"{name} is {getattr(w, name)} but energy_j / its count is {expected}",
                   f"{path}.{name}")


RULE = Rule(order=32, check=check)

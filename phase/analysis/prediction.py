"""The cost model against the measurements of one results file: per condition, predicted vs
measured tokens/s (and J/token); break-even acceptance per k; the best k per prompt; what
`auto` chose.

Predictions come from the file's own profile (`ResultsFile.profile`) and each run's steps
(`costmodel.predict`). Beside each stands the host's pace during its runs (`costmodel.pace`:
the plain runs nearest in time, against the profile's c_t(1)) and the prediction at that
pace, so a reader can tell a host that drifted after profiling from a term the model prices
wrong; the verdict is the profile's own, because the pace is read from single runs and carries
their noise (costmodel.pace; bench/results/2026-12-02-epyc-pace.md). Where a condition's
prediction misses by more than `TOLERANCE`, the miss is put on the term that is off the most:
the target's passes (Σ verify_ms), proposing (Σ propose_ms: draft passes, lookups, auto's
decisions) or the loop around them (decode time not in either). Energy is predicted the same
way from the profile's joules per pass, for the sensors the caller names (the file's
chip-energy sensors, summed: two sockets, two GPUs), and is not paced.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from phase.analysis import energy_j_per_token, runs_by_condition
from phase.costmodel import NoCost, cost_table, position_rates
from phase.costmodel.breakeven import best_k, break_even
from phase.costmodel.curve import Sensors, sensor_names
from phase.costmodel.pace import PaceReading, pace_at, plain_pace
from phase.costmodel.predict import measured_terms_ms
from phase.policy.strategies import (
    decides,
    family,
    fixed_proposer,
    is_baseline,
    proposer_families,
    run_terms,
)
from phase.results import ResultsFile, Run
from phase.results.schedule import Levels

TOLERANCE = 0.10
PROFILE_SHARE_LIMIT = 0.05  # issue 15: profiling adds less than 5% to a campaign's wall time


def profile_share(results: ResultsFile) -> float | None:
    """The profile's share of the campaign's wall time, or None without a profile or runs.

    The campaign's time is taken as the span from the first run's start to the last run's
    end plus the profile's own time: model loads and plain references are left out, so the
    share is, if anything, overstated."""
    if results.profile is None or not results.runs:
        return None
    span_s = (max(r.ended_unix_s for r in results.runs)
              - min(r.started_unix_s for r in results.runs))
    total_s = span_s + results.profile.wall_s
    return results.profile.wall_s / total_s if total_s > 0 else None


@dataclass(frozen=True)
class ConditionPrediction:
    prompt: str
    strategy: str
    runs: int
    measured_tokens_per_s: float
    predicted_tokens_per_s: float
    # Mean per run, in seconds: predicted and measured target passes and proposing, and the
    # measured decode time outside both (the Python loop).
    predicted_target_s: float
    measured_target_s: float
    predicted_propose_s: float
    measured_propose_s: float
    measured_other_s: float
    predicted_j_per_token: float | None
    measured_j_per_token: float | None
    energy_reason: str | None
    # The host's pace over the runs (mean; 1.10: 10% slower than profiled), None where a run
    # had no plain run to read it from; and the prediction at that pace.
    pace: float | None = None
    paced_tokens_per_s: float | None = None
    # The condition's extra factor levels (a sampled campaign's temperature): without them two
    # conditions of one prompt and strategy would read as one.
    levels: Levels = ()

    @property
    def error(self) -> float:
        """predicted / measured tokens/s - 1 (positive: the model expected it faster)."""
        return self.predicted_tokens_per_s / self.measured_tokens_per_s - 1.0

    @property
    def paced_error(self) -> float | None:
        """The same at the host's pace (None: no pace)."""
        if self.paced_tokens_per_s is None:
            return None
        return self.paced_tokens_per_s / self.measured_tokens_per_s - 1.0

    @property
    def energy_error(self) -> float | None:
        if self.predicted_j_per_token is None or not self.measured_j_per_token:
            return None
        return self.predicted_j_per_token / self.measured_j_per_token - 1.0

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE

    def blame(self) -> str | None:
        """Where the time prediction misses by more than TOLERANCE: the term off the most."""
        if self.within:
            return None
        terms = [
            ("target passes", self.predicted_target_s, self.measured_target_s),
            ("proposing", self.predicted_propose_s, self.measured_propose_s),
            ("the loop around them", 0.0, self.measured_other_s),
        ]
        name, predicted, measured = max(terms, key=lambda t: abs(t[1] - t[2]))
        diff = predicted - measured
        rel = f" ({diff / measured:+.0%})" if measured > 0 else ""
        pace = ("" if self.pace is None or self.paced_error is None else
                f"; the nearest plain runs ran at x{self.pace:.2f} the profile's pace, and at "
                f"that pace the prediction is off by {self.paced_error:+.0%}")
        return (f"{name}: predicted {predicted:.2f} s per run, measured {measured:.2f} s, "
                f"{diff:+.2f} s{rel}{pace}")


def _measured_j_per_token(run: Run, sensor: Sensors) -> float | None:
    """The run's energy per token over the named sensors, summed (None if one lacks it)."""
    values = [energy_j_per_token(run, n) for n in sensor_names(sensor)]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def _energy_sensor_ok(results: ResultsFile, sensor: Sensors) -> str | None:
    """Why energy cannot be predicted for this sensor (None: it can)."""
    profile = results.profile
    if profile is None:
        return "the file has no cost profile"
    if not sensor_names(sensor):
        return "no chip energy sensor in this file"
    if profile.energy_reason:
        return f"the profile has no energy per pass: {profile.energy_reason}"
    try:
        cost_table(profile, profile.points[0].kv_tokens, "energy", sensor)
    except NoCost as exc:
        return str(exc)
    return None


def run_fill(run: Run) -> int:
    """The KV fill one run is priced at: its mean over the run."""
    return run.prompt_tokens + run.tokens // 2


def _midpoint_s(run: Run) -> float:
    return (run.started_unix_s + run.ended_unix_s) / 2


# Readings by the host that ran them: a merged campaign's machines (and clocks) differ, and
# one machine's pace says nothing about another's.
PaceReadings = dict[str | None, list[PaceReading]]


def pace_readings(results: ResultsFile) -> PaceReadings:
    """The host's pace as each plain run of the file read it ({} without a profile)."""
    out: PaceReadings = {}
    if results.profile is None:
        return out
    for run in results.runs:
        if not is_baseline(run.strategy):
            continue
        pace = plain_pace(run.trace, cost_table(results.profile, run_fill(run)))
        if pace is not None:
            out.setdefault(run.host, []).append(PaceReading(_midpoint_s(run), pace, run.id))
    return out


def run_pace(readings: PaceReadings, run: Run) -> float | None:
    """The pace during a run: its host's plain runs nearest in time, never itself."""
    return pace_at(readings.get(run.host, []), _midpoint_s(run), exclude=run.id)


def predict_run(results: ResultsFile, run: Run, sensor: Sensors = None
                ) -> tuple[float, float, float | None]:
    """(predicted target ms, predicted propose ms, predicted joules or None) of one run,
    from the profile alone."""
    if results.profile is None:
        raise NoCost(f"{results.id}: no cost profile to predict from")
    fill = run_fill(run)
    time = run_terms(run.trace, run.strategy, cost_table(results.profile, fill))
    joules = None
    if _energy_sensor_ok(results, sensor) is None:
        table = cost_table(results.profile, fill, "energy", sensor)
        joules = run_terms(run.trace, run.strategy, table).total
    return time.target, time.propose, joules


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def predict_conditions(results: ResultsFile, sensor: Sensors = None
                       ) -> list[ConditionPrediction]:
    """One prediction per condition with runs; [] when the file has no profile."""
    if results.profile is None:
        return []
    why_no_energy = _energy_sensor_ok(results, sensor)
    readings = pace_readings(results)
    out = []
    for (prompt, strategy, levels), runs in runs_by_condition(results).items():
        predicted = [predict_run(results, r, sensor) for r in runs]
        paces = [run_pace(readings, r) for r in runs]
        known = [p for p in paces if p is not None]
        paced = len(known) == len(runs)  # a condition is paced whole or not at all
        measured = [measured_terms_ms(r.trace) for r in runs]
        tokens = _mean([float(r.tokens) for r in runs])
        pred_s = _mean([(t + p) / 1e3 for t, p, _ in predicted])
        paced_s = (_mean([(t + p) * q / 1e3 for (t, p, _), q in zip(predicted, known,
                                                                    strict=True)])
                   if paced else 0.0)
        joules = [j for _, _, j in predicted if j is not None]
        measured_j = [v for r in runs if (v := _measured_j_per_token(r, sensor)) is not None]
        out.append(ConditionPrediction(
            prompt=prompt, strategy=strategy, runs=len(runs),
            measured_tokens_per_s=_mean([r.tokens_per_s for r in runs]),
            predicted_tokens_per_s=tokens / pred_s if pred_s > 0 else 0.0,
            predicted_target_s=_mean([t / 1e3 for t, _, _ in predicted]),
            measured_target_s=_mean([m.target / 1e3 for m in measured]),
            predicted_propose_s=_mean([p / 1e3 for _, p, _ in predicted]),
            measured_propose_s=_mean([m.propose / 1e3 for m in measured]),
            measured_other_s=_mean([r.decode_s - m.total / 1e3 for r, m in zip(runs, measured,
                                                                                strict=True)]),
            predicted_j_per_token=_mean(joules) / tokens if joules else None,
            measured_j_per_token=_mean(measured_j) if measured_j else None,
            energy_reason=why_no_energy or (None if measured_j else
                                            "no measured energy for these runs"),
            pace=_mean(known) if paced else None,
            paced_tokens_per_s=tokens / paced_s if paced_s > 0 else None,
            levels=levels,
        ))
    return out


def prompt_fill(results: ResultsFile, prompt: str) -> int | None:
    """The KV fill a prompt's break-even and best k are priced at: its prompt tokens plus half
    the tokens a run generates (None: the prompt has no runs)."""
    run = next((r for r in results.runs if r.prompt == prompt), None)
    return None if run is None else run.prompt_tokens + results.config.tokens // 2


@dataclass(frozen=True)
class BreakEven:
    prompt: str
    k: int
    draft: float | None  # None: drafting k tokens cannot beat plain decoding here...
    ngram: float | None
    has_draft: bool = True  # ...or, when False, no draft model was profiled


def break_even_rows(results: ResultsFile, ks: tuple[int, ...] = (1, 2, 4, 8, 16)
                    ) -> list[BreakEven]:
    """α* per prompt (its own KV fill) and k, for the draft model and n-gram proposals."""
    if results.profile is None:
        return []
    rows: list[BreakEven] = []
    for prompt in results.config.prompts:
        fill = prompt_fill(results, prompt.name)
        if fill is None:
            continue
        table = cost_table(results.profile, fill)
        draft, ngram = family("draft").expected(), family("ngram").expected()
        assert draft is not None and ngram is not None
        rows.extend(BreakEven(prompt.name, k, break_even(table, draft, k),
                              break_even(table, ngram, k), table.draft is not None)
                    for k in ks)
    return rows


@dataclass(frozen=True)
class BestK:
    prompt: str
    proposer: str  # draft | ngram
    alpha: float | None  # i.i.d. estimate from the runs' steps
    k: int  # 0: no k beats plain decoding
    speedup: float  # predicted tokens per cost over plain's at that k (1.0 at k = 0)
    kept: int = 0  # the positions kept and tried that alpha pools (its counts)
    tried: int = 0


def best_k_rows(results: ResultsFile) -> list[BestK]:
    """Per prompt and proposer: the k the measured per-position acceptance makes best."""
    if results.profile is None:
        return []
    out: list[BestK] = []
    for prompt in results.config.prompts:
        fill = prompt_fill(results, prompt.name)
        if fill is None:
            continue
        table = cost_table(results.profile, fill)
        for fam in proposer_families():
            proposer, expected = fam.proposer_name, fam.expected()
            if proposer is None or expected is None:
                continue
            steps = [s for r in proposer_runs(results, prompt.name, proposer) for s in r.trace
                     if (s.proposer or fixed_proposer(r.strategy)) == proposer]
            rates = position_rates(steps)
            if rates.alpha is None:
                continue
            try:
                k, speedup = best_k(table, expected, rates.rates(16))
            except NoCost:  # no draft model was profiled
                continue
            out.append(BestK(prompt.name, proposer, rates.alpha, k, speedup,
                             sum(rates.kept), sum(rates.tried)))
    return out


def proposer_runs(results: ResultsFile, prompt: str, proposer: str) -> list[Run]:
    """The prompt's runs with steps proposed by `proposer` (draft or ngram): a fixed strategy
    of it, or auto where it chose it; the runs whose acceptance a best k pools."""
    return [r for r in results.runs if r.prompt == prompt
            and _proposed_by(r, proposer)]


def _proposed_by(run: Run, proposer: str) -> bool:
    fixed = fixed_proposer(run.strategy)
    return any((s.proposer or fixed) == proposer for s in run.trace)


@dataclass(frozen=True)
class AutoShare:
    prompt: str
    proposer: str
    k: int
    steps: int
    share: float  # of the prompt's auto steps


def auto_choices(results: ResultsFile) -> list[AutoShare]:
    """What `auto` chose per prompt: share of its steps by proposer and k."""
    out: list[AutoShare] = []
    for prompt in results.config.prompts:
        steps = [s for r in results.runs if r.prompt == prompt.name and decides(r.strategy)
                 for s in r.trace if s.proposer is not None]
        if not steps:
            continue
        counts = Counter((s.proposer or "none", s.proposed) for s in steps)
        out.extend(AutoShare(prompt.name, who, k, n, n / len(steps))
                   for (who, k), n in sorted(counts.items()))
    return out


def report_lines(results: ResultsFile, sensor: Sensors = None) -> list[str]:
    """The comparison as plain text (for `phase predict`)."""
    lines = [f"{'prompt':<10} {'strategy':<10} {'tok/s':>7} {'predicted':>9} {'error':>7} "
             f"{'pace':>5} {'paced':>7}  where it misses"]
    for p in predict_conditions(results, sensor):
        pace = "-" if p.pace is None else f"{p.pace:.2f}"
        paced = "-" if p.paced_error is None else f"{p.paced_error:+.1%}"
        lines.append(f"{p.prompt[:10]:<10} {p.strategy[:10]:<10} {p.measured_tokens_per_s:>7.1f} "
                     f"{p.predicted_tokens_per_s:>9.1f} {p.error:>+7.1%} {pace:>5} "
                     f"{paced:>7}  {p.blame() or f'within {TOLERANCE:.0%}'}")
        if p.predicted_j_per_token is not None and p.measured_j_per_token is not None:
            lines.append(f"{'':<21} J/token {p.measured_j_per_token:.4f}, predicted "
                         f"{p.predicted_j_per_token:.4f} ({p.energy_error or 0.0:+.1%})")
    lines.append("pace: the plain runs nearest in time against the profile (1.10: 10% slower); "
                 "paced: the error at that pace")
    lines.append("")
    lines.append("break-even acceptance (i.i.d.) per k: draft / n-gram")
    for r in break_even_rows(results):
        show = [("no draft" if not r.has_draft and fam.needs_draft else
                 "cannot pay" if a is None else f"{a:.0%}")
                for fam, a in ((family("draft"), r.draft), (family("ngram"), r.ngram))]
        lines.append(f"  {r.prompt[:10]:<10} k={r.k:<3} {show[0]:>10} / {show[1]}")
    lines.append("")
    lines.append("best k from measured per-position acceptance")
    for b in best_k_rows(results):
        best = "none beats plain" if b.k == 0 else f"k={b.k}: {b.speedup:.2f}x plain"
        alpha = "n/a" if b.alpha is None else f"{b.alpha:.0%}"
        lines.append(f"  {b.prompt[:10]:<10} {b.proposer:<6} acceptance {alpha}: {best}")
    share = profile_share(results)
    if share is not None and results.profile is not None:
        lines.append("")
        lines.append(f"cost profile: {results.profile.wall_s:.1f} s, {share:.1%} of the "
                     f"campaign's wall time (target < {PROFILE_SHARE_LIMIT:.0%})")
    shares = auto_choices(results)
    if shares:
        lines.append("")
        lines.append("auto's choices (share of its steps)")
        lines.extend(f"  {s.prompt[:10]:<10} {s.proposer:<6} k={s.k:<3} {s.share:.1%}"
                     for s in shares)
    return lines

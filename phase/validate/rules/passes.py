"""passes (blocking / rejected): a run whose decode repeated inside one energy window.

A decode shorter than its energy sensor needs repeats back-to-back inside one window
(`Run.passes`, phase.campaign.windows), and the window's energy counts every pass's tokens
(phase.analysis.window_tokens). Recomputed from the file:

- blocking: every pass generated the run's own number of tokens (the configured N); the
  passes' decode time fits in each of the run's energy windows (they ran inside it, within
  `clock_tolerance_s`); no more passes than `config.max_passes`. A file whose passes
  contradict its windows cannot say what the energy per token is over. Passes the list lost
  are recomputed from the windows that held them: passes run back to back, the time between
  them a cache trim, so a window longer than its passes' decoding by LOST_SHARE of the
  shortest pass or more (beyond `clock_tolerance_s`) held a pass the list does not count,
  and a campaign that sized its windows (config.window_min_s) records every pass, so an
  empty list there lost them all.
- rejected: a pass whose output (token sha256) differs from the run's own. Greedy decoding of
  the same prompt from the same cache should repeat itself token for token; where it did not
  (numerics of a nondeterministic backend), the window's energy is over decodes that are not
  the same one, so every sensor's energy of that run is rejected, with the pass that differed.
"""

from __future__ import annotations

from phase.analysis import window_s
from phase.results import ResultsFile, Run
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    most = results.config.max_passes
    sized = bool(results.config.window_min_s)
    for i, run in enumerate(results.runs):
        out += _lost(run, i, sized, settings, ctx)
        if not run.passes:
            continue
        where = f"$.runs[{i}].passes"
        for j, p in enumerate(run.passes):
            if p.tokens != run.tokens:
                out.append(ctx.finding(
                    "passes", "blocking",
                    f"pass {j} generated {p.tokens} tokens, but the run {run.tokens}",
                    run=run, json_path=f"{where}[{j}].tokens"))
        if most is not None and len(run.passes) > most:
            out.append(ctx.finding(
                "passes", "blocking",
                f"{len(run.passes)} passes, more than config.max_passes ({most})",
                run=run, json_path=where, numbers={"passes": len(run.passes),
                                                   "max_passes": most}))
        decoding = sum(p.decode_s for p in run.passes)
        for k, w in enumerate(run.energy):
            if decoding > window_s(w) + settings.clock_tolerance_s:
                out.append(ctx.finding(
                    "passes", "blocking",
                    f"{len(run.passes)} passes decoded for {decoding:.6g} s, longer than the "
                    f"{window_s(w):.6g} s energy window they ran in",
                    run=run, sensor=w.sensor, json_path=f"$.runs[{i}].energy[{k}]",
                    numbers={"decode_s": decoding, "window_s": window_s(w)}))
        differ = [j for j, p in enumerate(run.passes) if p.output_sha256 != run.output_sha256]
        if not differ:
            continue
        for w in run.energy:
            if w.energy_j is None:
                continue
            out.append(ctx.finding(
                "passes", "rejected",
                f"pass(es) {', '.join(map(str, differ))} of {len(run.passes)} produced other "
                "tokens than the run's own output: the window's energy is not over repeats of "
                "one decode",
                run=run, sensor=w.sensor, json_path=f"{where}[{differ[0]}].output_sha256",
                numbers={"passes": len(run.passes), "differing": len(differ)}))
    return out


# The share of the shortest pass that a window's time beyond its passes' decoding must reach
# to hold a lost pass: below a whole one, since a lost pass may have been the shortest, and
# well above the cache trims between passes, so that a stall of the process between two
# passes is not taken for one.
LOST_SHARE = 0.75


def _lost(run: Run, i: int, sized: bool, settings: RuleSettings, ctx: Context
          ) -> list[Finding]:
    """Passes missing from the list while the window that held them, and its energy, stayed:
    the energy per token would be over fewer tokens than the window's energy paid for."""
    where = f"$.runs[{i}].passes"
    if not run.passes:
        if not sized:
            return []
        return [ctx.finding(
            "passes", "blocking", "no passes recorded, but the campaign sized its windows "
            "(config.window_min_s), and a sized window records every pass, the first included",
            run=run, json_path=where, numbers={"passes": 0})]
    decoding = sum(p.decode_s for p in run.passes)
    shortest = min(p.decode_s for p in run.passes)
    out = []
    for w in run.energy:
        unaccounted = window_s(w) - decoding
        if shortest > 0 and unaccounted - settings.clock_tolerance_s >= LOST_SHARE * shortest:
            out.append(ctx.finding(
                "passes", "blocking",
                f"the {window_s(w):.6g} s energy window holds {len(run.passes)} passes that "
                f"decoded for {decoding:.6g} s: {unaccounted:.6g} s unaccounted, room for "
                f"most of a pass (the shortest took {shortest:.6g} s): passes are missing "
                "from the list while the window's energy counts them",
                run=run, sensor=w.sensor, json_path=where,
                numbers={"passes": len(run.passes), "decode_s": decoding,
                         "window_s": window_s(w), "shortest_pass_s": shortest}))
    return out


RULE = Rule(order=40, check=check)

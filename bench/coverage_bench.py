"""The coverage table: how often the intervals phase publishes hold the truth, by simulation
(phase.analysis.coverage), for every number of rounds the default designs run, at CV 5, 15 and
30%, with and without an outlying run in a third of the campaigns; the false "resolved" rate at
a true ratio of 1.0; the old percentile bootstrap's coverage on the same draws; and the
family-wise rate of a note of 24 conditions none of which differs from plain, with and without
the Benjamini-Hochberg correction; and the serving note's auto floor (auto over the best of
three rivals, intervals.floor_interval) at a tie, a near tie and a clear leader. No model:
minutes of CPU.

    .venv/bin/python -m bench.run --only coverage            # 4000 draws a cell
    .venv/bin/python -m bench.run --only coverage --quick    # 400
"""

from __future__ import annotations

from bench.common import Context, Section
from phase.analysis.bench_rows import BenchRow
from phase.analysis.coverage import Design, family_rate, floor_coverage, simulate

ROUNDS = (2, 3, 4, 5, 6, 8)
CVS = (0.05, 0.15, 0.30)
OUTLIER_SHARES = (0.0, 0.3)
FAMILY = 24  # the sampling note's ratios to plain
NOMINAL, TARGET, FALSE_TARGET = 0.95, 0.93, 0.05
# plain and the two fixed proposers' true relative speeds: a tie, a near tie, a clear leader
FLOOR_RIVALS = {"tie": (1.0, 1.0, 1.0), "near tie": (1.0, 0.97, 0.8),
                "clear leader": (0.9, 1.0, 0.7)}


def run(ctx: Context) -> Section:
    draws = 400 if ctx.quick else 4000
    notes = 200 if ctx.quick else 4000
    section = Section("coverage")
    section.info = {"draws": draws, "notes": notes, "rounds": list(ROUNDS), "cvs": list(CVS),
                    "outlier_shares": list(OUTLIER_SHARES), "family": FAMILY,
                    "nominal": NOMINAL, "target": TARGET}
    for n in ROUNDS:
        for cv in CVS:
            for share in OUTLIER_SHARES:
                cell = simulate(Design(n, cv, outlier_share=share), draws=draws, seed=11)
                ctx.log(f"n={n} cv={cv:.0%} outliers={share:.0%}: {cell.coverage:.1%} "
                        f"(bootstrap {cell.legacy_coverage:.1%})")
                section.rows.append(BenchRow(
                    "coverage", f"ratio interval coverage, n={n}, CV {cv:.0%}"
                    f"{', outliers' if share else ''}",
                    cell.coverage, NOMINAL, "nominal", "share", cell.coverage / NOMINAL,
                    f">= {TARGET:.0%}", cell.coverage >= TARGET,
                    f"t on log paired ratios {cell.coverage:.1%} of {draws} draws; false "
                    f"'resolved' at a true 1.0: {cell.false_resolved:.1%}; the old bootstrap "
                    f"of the median covered {cell.legacy_coverage:.1%}",
                    samples={}, breakdown={"false_resolved": [cell.false_resolved],
                                           "legacy_coverage": [cell.legacy_coverage]}))
    for n in (3, 6):
        rate = family_rate(FAMILY, Design(n, 0.15), notes=notes, seed=12)
        ctx.log(f"family of {FAMILY}, n={n}: {rate.uncorrected:.1%} -> {rate.corrected:.1%}")
        section.rows.append(BenchRow(
            "coverage", f"notes of {FAMILY} null ratios with a false claim, n={n}",
            rate.corrected, FALSE_TARGET, "alpha", "share", rate.corrected / FALSE_TARGET,
            f"<= {FALSE_TARGET:.0%} (+ sampling error)",
            rate.corrected <= FALSE_TARGET + 2 * (FALSE_TARGET * 0.95 / notes) ** 0.5,
            f"Benjamini-Hochberg over the note's {FAMILY} ratios: {rate.corrected:.1%} of "
            f"{notes} notes; uncorrected {rate.uncorrected:.1%}",
            samples={}, breakdown={"uncorrected": [rate.uncorrected]}))
    _floor_rows(section, draws)
    return section


def _floor_rows(section: Section, draws: int) -> None:
    for n in (3, 4):
        for label, rivals in FLOOR_RIVALS.items():
            coverage = floor_coverage(Design(n, 0.08, drift=0.10), rivals, draws=draws,
                                      seed=13)
            section.rows.append(BenchRow(
                "coverage", f"auto floor interval coverage, n={n}, rivals at a {label}",
                coverage, NOMINAL, "nominal", "share", coverage / NOMINAL, f">= {TARGET:.0%}",
                coverage >= TARGET,
                f"auto at 0.98x the best of three rivals {rivals}, its lowest ratio to any "
                f"of them over 4 levels; run CV 8%, shared drift 10%: {coverage:.1%} "
                f"of {draws} draws", samples={}, breakdown={}))

"""backend (blocking): every declared sensor comes from a publishable backend.

The publishable backends are an allow-list (`RuleSettings.publishable_backends`: the real
backends of phase.sensors). A test fixture, a simulated sensor or an unknown backend in a
results file means its numbers were not measured by anything phase knows how to read, so the
file cannot be published, whichever sensor the tables would use.
"""

from __future__ import annotations

from phase.results import ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    allowed = settings.publishable_backends
    return [
        ctx.finding(
            "backend",
            "blocking",
            f"sensor backend {s.backend!r} is not a publishable backend "
            f"({', '.join(allowed)}); a fixture or simulated sensor never measured anything",
            sensor=s.name,
            json_path=f"$.sensors[{i}].backend",
        )
        for i, s in enumerate(results.sensors)
        if s.backend not in allowed
    ]


RULE = Rule(order=20, check=check)

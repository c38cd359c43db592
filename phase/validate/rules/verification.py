"""verification (blocking): a sampled run's verification rule, and its steps replayed under it.

A sampled run is published as equal to plain sampling in distribution (its
matches_plain_reason), which holds only for an exact verification rule, so the rule a run
records (Run.verification: name and version, phase.results.verification) is checked, and what
follows from it is recomputed from the run's tokens rather than trusted:

- a sampled run that proposes (a strategy with k) records a rule this phase knows
  (phase.policy.speculative_sampling.RECORDED: the name at that version) and one that is
  exact; a greedy run (no seed) or a plain one (k null: nothing proposed) records none. A file
  in which some sampled runs record their rule must record it for all of them; a file in which
  none does was written before phase recorded it: its runs' rule is unrecorded, which is a
  note of the report (`unrecorded`), not a finding, so committed campaigns still validate as
  before (the campaigns of that time verified every proposal by rejection sampling);
- a point-mass step (an n-gram proposal, the family's sampled proposer: phase.policy.
  sampled_proposers) is replayed over the reference's prompt token ids and the run's tokens:
  it proposes exactly the lookup's continuation (capped by k, the tokens left minus one and,
  for an adaptive `ngram`, the length its earlier steps left in force), and keeps exactly as
  many proposals as agree with the tokens generated next. Under rejection sampling (and
  greedy-match) a rejected point mass x is never what the step emits in its place (the
  residual is p with x removed), so the acceptance of every such step, and so the run's
  accepted count and acceptance, follow from its tokens. A draft step's proposals are draws
  from q that no file records; its counts are checked by the consistency rule (drafted,
  accepted and acceptance as the trace's sums, proposals as many as k or the tokens left
  allow), as every run's are. `auto`'s n-gram steps are replayed by the decisions rule.

The first problem per run is reported, at its JSON path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phase.base.errors import UsageProblem
from phase.policy.sampled_proposers import AdaptiveNgramSampler, NgramSampler
from phase.policy.speculative_sampling import recorded_rule
from phase.policy.strategies import Strategy, parse_strategy
from phase.results import ResultsFile, Run
from phase.results.levels import reference_for
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

Problem = tuple[str, str]  # the message, the path below the run


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    recorded = any(r.verification is not None for r in results.runs)
    for i, run in enumerate(results.runs):
        problem = _record(run, recorded) or _replay(run, results)
        if problem is not None:
            message, field = problem
            out.append(ctx.finding("verification", "blocking", message, run=run,
                                   json_path=f"$.runs[{i}].{field}"))
    return out


def unrecorded(results: ResultsFile) -> list[str]:
    """The report's note for a file written before phase recorded the rule ([] otherwise)."""
    if any(r.verification is not None for r in results.runs):
        return []
    count = sum(1 for r in results.runs if _proposes_sampled(r))
    if not count:
        return []
    return [f"verification rule unrecorded: {count} sampled run(s) that propose were written "
            "before phase recorded it (Run.verification); their point-mass steps are "
            "replayed as rejection sampling"]


def _proposes_sampled(run: Run) -> bool:
    return run.seed is not None and run.k is not None


def _record(run: Run, recorded: bool) -> Problem | None:
    rule = run.verification
    if rule is None:
        if recorded and _proposes_sampled(run):
            return ("a sampled run that proposes records no verification rule, though "
                    "other runs of this file record theirs", "verification")
        return None
    if run.seed is None:
        return (f"a greedy run records verification rule {rule.name!r}; greedy runs verify "
                "by argmax and record none", "verification")
    if run.k is None:
        return (f"a run that proposes nothing (k null) records verification rule "
                f"{rule.name!r}; it has nothing to verify", "verification")
    known = recorded_rule(rule)
    if known is None:
        return (f"verification rule {rule.name!r} version {rule.version} is not one this "
                "phase knows (phase.policy.speculative_sampling.RECORDED)", "verification")
    if not known[1].exact:
        return (f"verification rule {rule.name!r} version {rule.version} does not keep the "
                "target's distribution, but the run is published as equal to plain sampling "
                "in distribution", "verification.name")
    return None


class _PointMasses:
    """The sampled proposers a replay can rebuild from the file alone: the n-gram's. A draft's
    proposals are draws from q, and auto's steps are the decisions rule's."""

    def draft(self) -> None:
        return None

    def ngram(self, n_min: int, n_max: int, k_max: int | None) -> NgramSampler:
        if k_max is not None:
            return AdaptiveNgramSampler(n_min, n_max, k_max)
        return NgramSampler(n_min, n_max)

    def auto(self, kv_tokens: int, k_max: int) -> None:
        return None


def _proposer(run: Run, results: ResultsFile) -> tuple[Strategy, NgramSampler] | None:
    config = results.config
    try:
        strategy = parse_strategy(run.strategy, ngram_n_min=config.ngram_n_min,
                                  ngram_n_max=config.ngram_n_max, ngram_k=config.ngram_k,
                                  ngram_adaptive=config.ngram_adaptive)
        made: Any = strategy.family.proposer(strategy, _PointMasses(), 0)
    except UsageProblem:
        return None  # a strategy this phase cannot build: the consistency rule's to report
    return (strategy, made) if isinstance(made, NgramSampler) else None


def _replay(run: Run, results: ResultsFile) -> Problem | None:
    """The run's point-mass steps as speculate_sampled made them, from its tokens."""
    if not _proposes_sampled(run):
        return None
    built = _proposer(run, results)
    ref = reference_for(results, run.prompt, run.factors)
    if built is None or ref is None or ref.prompt_token_ids is None \
            or len(ref.prompt_token_ids) != run.prompt_tokens:
        return None  # not replayable here; the prompt's length is the consistency rule's
    strategy, proposer = built
    seq = list(ref.prompt_token_ids)
    proposer.restart(seq)
    tokens, generated = list(run.token_ids), 0
    unused = np.random.default_rng(0)  # a lookup draws nothing
    for j, step in enumerate(run.trace):
        limit = min(strategy.max_proposal, run.tokens - generated - 1)
        proposal = proposer.propose(seq, limit, unused)[0][:limit]
        if step.proposed != len(proposal):
            return (f"step {j} proposes {step.proposed} tokens, but the n-gram lookup over "
                    f"the prompt and the {generated} tokens before it proposes "
                    f"{len(proposal)}", f"trace[{j}].proposed")
        after = tokens[generated:generated + len(proposal)]
        agree = next((n for n, (a, b) in enumerate(zip(proposal, after, strict=False))
                      if a != b), min(len(proposal), len(after)))
        if step.accepted != agree:
            return (f"step {j} accepts {step.accepted} of its {len(proposal)} point-mass "
                    f"proposals, but {agree} agree with the tokens generated next, and a "
                    "rejected point mass is never emitted in its place", f"trace[{j}].accepted")
        new = tokens[generated:generated + step.accepted + 1]
        seq.extend(new)
        generated += len(new)
        observe = getattr(proposer, "observe", None)
        if observe is not None:
            observe(len(proposal), step.accepted)
    return None


RULE = Rule(order=240, check=check)

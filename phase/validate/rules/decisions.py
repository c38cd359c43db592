"""decisions (blocking): `auto`'s recorded decisions, replayed step by step from its trace.

`auto` records per step the proposer it chose (`none`, `ngram`, `draft`; `proposed` is its
k), the tokens it expected, its expected gain over a plain step and the n-gram lookup's
matched context (phase.policy.auto). Like the adaptive n-gram length (rule consistency), what
follows from the trace is replayed, never trusted:

- every `auto` step records a decision, and no other strategy's step does;
- the decision agrees with the step: `none` exactly when nothing was proposed, and no more
  than the tokens left allow; `ngram` only with a match; `draft` only where the campaign has a
  draft model, and only where the step's proposing time holds that many draft passes at the
  profile's cheapest draft cost, scaled by the run's own pace where it ran faster than when
  profiled (its target passes against the profile's), and halved for noise;
- the matched context is one the matcher can report (0, or from its shortest key to its
  longest context, within the text so far). Where the file records the prompt's token ids
  (schema 8), the lookup itself is replayed over the prompt and the tokens generated so far:
  the context must be the one it finds, and an `ngram` proposal must be its continuation,
  accepted exactly as far as it agrees with the tokens generated next. Older files record no
  prompt ids, so a match inside the prompt cannot be refuted there: the context must then be
  at least as long as the longest key whose suffix occurs earlier in the generated tokens;
- at the profile's costs for the run's KV fill (auto's own table): the expected gain is the
  expected tokens per cost over a plain step's; `none` expects one token, `ngram` between 1
  and k + 1; the draft model's candidate, whose acceptance estimate depends only on earlier
  draft steps' outcomes, is replayed exactly: a `draft` step's k and expected tokens are the
  replay's, and no other step passed over a draft candidate worth more than its choice. A
  greedy run's draft cost includes the mirror of the last verified batch; a sampled run's
  (a temperature level above 0) does not, as its draft keeps its own rows
  (phase.policy.sampled_auto).

The first problem per run is reported, at its step's JSON path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from phase.costmodel import CostTable, NoCost, cost_table
from phase.policy.auto import (
    DECAY,
    DRAFT_PRIOR,
    DRAFT_PRIOR_WEIGHT,
    K_MAX,
    best_proposal,
)
from phase.policy.estimates import PositionEstimate
from phase.policy.ngram import DEFAULT_KEY_NS, MAX_CONTEXT, NgramMatcher
from phase.policy.strategies import Proposing, decides, proposes_nothing, proposing_of
from phase.results import CostProfile, ResultsFile, Run
from phase.results.levels import run_temperature
from phase.results.schema import Step
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

FIELDS = ("proposer", "expected_tokens", "expected_gain", "match_tokens")
# Float round-off between auto's arithmetic and the replay's (the same operations).
_REL = 1e-9
# A draft pass on a host that sped up since profiling: at least this share of its cheapest
# profiled cost.
_DRAFT_SPEEDUP = 0.5


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for i, run in enumerate(results.runs):
        if run.serving is not None:
            continue  # its trace is the decoder's steps over many requests: nothing to replay
        problem = (_replay(run, results) if decides(run.strategy) else _undecided(run))
        if problem is not None:
            message, j, field, numbers = problem
            out.append(ctx.finding("decisions", "blocking", message, run=run, numbers=numbers,
                                   json_path=f"$.runs[{i}].trace[{j}].{field}"))
    return out


Problem = tuple[str, int, str, dict[str, float]]


def _undecided(run: Run) -> Problem | None:
    for j, step in enumerate(run.trace):
        for field in FIELDS:
            if getattr(step, field) is not None:
                return (f"step {j} records `auto`'s {field}, but {run.strategy!r} makes no "
                        "decisions: an unexpected field", j, field, {})
    return None


@dataclass
class _State:
    """What auto knows before a step that the trace determines: tokens so far, the draft
    model's acceptance estimate, and what its next draft call must feed and mirror."""

    rates: PositionEstimate
    mirrors: bool = True  # AutoProposer's `mirrors`: False for a sampled run (SampledAuto)
    generated: int = 0
    feed: int = 1
    mirror: int | None = None

    def after(self, step: Step) -> None:
        """AutoProposer.observe, from the recorded outcome."""
        self.rates.fade()
        if proposing_of(step.proposer) is Proposing.DRAFT and step.proposed > 0:
            self.rates.observe(step.proposed, step.accepted)
            self.mirror = step.proposed + 1 if self.mirrors else None
            self.feed = 1
        else:
            self.feed += step.accepted + 1
        self.generated += step.accepted + 1


@dataclass(frozen=True)
class _Setting:
    table: CostTable | None
    draft: bool  # the campaign has a draft model (and, with a profile, its costs)
    min_draft_ms: float | None
    k_max: int


def _setting(run: Run, results: ResultsFile) -> _Setting:
    has_draft = any(m.role == "draft" for m in results.models)
    table, min_draft = None, None
    profile = results.profile
    if profile is not None:
        kv = run.prompt_tokens + results.config.tokens // 2
        objective = results.config.auto_objective or "time"
        sensors = results.primary_energy.sensors if results.primary_energy else None
        try:
            table = cost_table(profile, kv, objective, sensors)
        except NoCost:
            table = None
        drafts = [c.ms for p in profile.points for c in p.draft]
        min_draft = min(drafts) * _pace(run, profile, kv) if drafts else None
        has_draft = has_draft and bool(drafts)
    return _Setting(table, has_draft, min_draft, min(run.k or K_MAX, K_MAX))


class _Lookup:
    """The n-gram lookup auto made before each step, replayed over the recorded prompt token
    ids and the run's tokens (the matcher's index only grows within a run, as auto's did)."""

    def __init__(self, prompt: list[int], tokens: list[int], k_max: int) -> None:
        self.prompt, self.tokens, self.k_max = prompt, tokens, k_max
        self.matcher = NgramMatcher()
        self.matcher.begin(prompt)

    def at(self, generated: int) -> tuple[int, list[int]]:
        match = self.matcher.lookup(self.prompt + self.tokens[:generated], self.k_max)
        return match.context, match.continuation


def _lookup(run: Run, results: ResultsFile, setting: _Setting) -> _Lookup | None:
    ref = next((r for r in results.references if r.prompt == run.prompt), None)
    ids = ref.prompt_token_ids if ref is not None else None
    if ids is None or len(ids) != run.prompt_tokens:
        return None  # not recorded; a length that disagrees is the consistency rule's
    return _Lookup(list(ids), list(run.token_ids), setting.k_max)


def _pace(run: Run, profile: CostProfile, kv: int) -> float:
    """How much faster than when profiled the host ran this run, by its own target passes
    (each step verifies proposed + 1 tokens, a pass the profile prices): on a shared machine
    the profile may have been timed while other work ran, and a run made quiet then drafts
    faster than the profile's cheapest draft pass. 1 where the run was as fast or slower."""
    table = cost_table(profile, kv)
    ratios = sorted(s.verify_ms / cost for s in run.trace
                    if (cost := table.target(s.proposed + 1)) > 0)
    return min(1.0, ratios[len(ratios) // 2]) if ratios else 1.0


def _replay(run: Run, results: ResultsFile) -> Problem | None:
    setting = _setting(run, results)
    state = _State(PositionEstimate(K_MAX, DRAFT_PRIOR, DRAFT_PRIOR_WEIGHT, DECAY),
                   mirrors=run_temperature(results.config, run.factors) <= 0)
    earlier = _Earlier(list(run.token_ids))
    lookup = _lookup(run, results, setting)
    for j, step in enumerate(run.trace):
        limit = min(setting.k_max, run.tokens - state.generated - 1)
        problem = next(_step_problems(run, j, step, state, setting, limit, earlier, lookup),
                       None)
        if problem is not None:
            return problem
        state.after(step)
    return None


def _step_problems(run: Run, j: int, step: Step, state: _State, setting: _Setting,
                   limit: int, earlier: _Earlier, lookup: _Lookup | None
                   ) -> Iterator[Problem]:
    missing = [f for f in FIELDS if getattr(step, f) is None]
    if missing:
        yield (f"step {j} of an `auto` run records no {missing[0]}: auto records its decision "
               "at every step", j, missing[0], {})
        return
    yield from _shape(run, j, step, state, setting, limit)
    if lookup is not None:
        yield from _replayed_match(run, j, step, state, lookup)
    else:
        yield from _match(run, j, step, state, earlier)
    if setting.table is not None:
        yield from _costs(j, step, state, setting, setting.table, limit)


def _shape(run: Run, j: int, step: Step, state: _State, setting: _Setting,
           limit: int) -> Iterator[Problem]:
    who, k = step.proposer, step.proposed
    if proposes_nothing(who) != (k == 0):
        yield (f"step {j} proposes {k} tokens but records proposer {who!r}: `none` is the "
               "choice to propose nothing", j, "proposer", {"proposed": k})
    if k > max(limit, 0):
        yield (f"step {j} proposes {k} tokens with {run.tokens - state.generated} left to "
               f"generate: auto proposes at most {max(limit, 0)} there", j, "proposed",
               {"proposed": k, "limit": max(limit, 0)})
    if proposing_of(who) is Proposing.LOOKUP and step.match_tokens == 0:
        yield (f"step {j} proposes {k} tokens from the n-gram matcher, but its lookup found no "
               "match (match_tokens 0)", j, "match_tokens", {"proposed": k})
    if proposing_of(who) is Proposing.DRAFT and not setting.draft:
        yield (f"step {j} proposes from the draft model, but this campaign has no draft model "
               "(none in $.models, or no draft costs in the profile)", j, "proposer", {})
    if proposing_of(who) is Proposing.DRAFT and setting.min_draft_ms is not None:
        least = k * setting.min_draft_ms * _DRAFT_SPEEDUP
        if step.propose_ms < least:
            yield (f"step {j} claims {k} tokens drafted by the draft model, but spent "
                   f"{step.propose_ms:.4g} ms proposing: {k} draft passes take at least "
                   f"{least:.4g} ms on this host (half the profile's cheapest draft pass at "
                   f"the run's own pace, {setting.min_draft_ms:.4g} ms, each); the trace "
                   "shows no draft pass",
                   j, "proposer", {"propose_ms": step.propose_ms, "min_ms": least})


class _Earlier:
    """For each matcher key length n, where each n-gram of the generated tokens first ends
    (exclusive): the lookup at a step indexes the n-grams ending before its last token."""

    def __init__(self, tokens: list[int]) -> None:
        self.tokens = tokens
        self.first_end: dict[int, dict[tuple[int, ...], int]] = {}
        for n in DEFAULT_KEY_NS:
            ends: dict[tuple[int, ...], int] = {}
            for end in range(n, len(tokens) + 1):
                ends.setdefault(tuple(tokens[end - n:end]), end)
            self.first_end[n] = ends

    def longest_key(self, generated: int) -> int:
        """The longest key n whose last n generated tokens (of the first `generated`) occur
        earlier among them, ending before the last; 0 if none."""
        for n in sorted(DEFAULT_KEY_NS, reverse=True):
            if n > generated:
                continue
            end = self.first_end[n].get(tuple(self.tokens[generated - n:generated]))
            if end is not None and end <= generated - 1:
                return n
        return 0


def _match(run: Run, j: int, step: Step, state: _State,
           earlier: _Earlier) -> Iterator[Problem]:
    c = step.match_tokens
    assert c is not None
    known = run.prompt_tokens + state.generated  # the sequence the lookup saw
    most = min(MAX_CONTEXT, known - 1)
    if c != 0 and not min(DEFAULT_KEY_NS) <= c <= most:
        yield (f"step {j} records a matched context of {c} tokens; the matcher reports 0 or "
               f"{min(DEFAULT_KEY_NS)} to {most} here (its shortest key, its longest context, "
               f"the {known} tokens so far)", j, "match_tokens", {"match_tokens": c})
        return
    found = earlier.longest_key(state.generated)
    if c < found:
        yield (f"step {j} records a matched context of {c} tokens, but the last {found} "
               "generated tokens occur earlier in the generated text, so the lookup matched at "
               f"least {found}", j, "match_tokens", {"match_tokens": c, "at_least": found})


def _replayed_match(run: Run, j: int, step: Step, state: _State,
                    lookup: _Lookup) -> Iterator[Problem]:
    context, continuation = lookup.at(state.generated)
    if step.match_tokens != context:
        yield (f"step {j} records a matched context of {step.match_tokens} tokens, but the "
               f"n-gram lookup replayed over the prompt's {len(lookup.prompt)} recorded token "
               f"ids and the {state.generated} tokens generated so far finds {context}",
               j, "match_tokens", {"match_tokens": step.match_tokens or 0, "replayed": context})
        return
    if proposing_of(step.proposer) is not Proposing.LOOKUP:
        return
    k, accepted = step.proposed, step.accepted
    proposal = continuation[:k]
    following = lookup.tokens[state.generated:state.generated + k + 1]
    agree = 0
    while agree < min(len(proposal), len(following)) and proposal[agree] == following[agree]:
        agree += 1
    if len(proposal) < k or agree != accepted:
        yield (f"step {j} records {k} tokens proposed from the n-gram match and {accepted} "
               f"accepted, but the replayed match continues with {len(proposal)} token(s) of "
               f"which the run's next tokens agree with {agree}: the proposal is not the "
               "context's", j, "accepted", {"proposed": k, "accepted": accepted,
                                            "replayed_agree": agree})


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL, abs_tol=1e-12)


def _costs(j: int, step: Step, state: _State, setting: _Setting, table: CostTable,
           limit: int) -> Iterator[Problem]:
    who, k = step.proposer, step.proposed
    drafted = proposing_of(who) is Proposing.DRAFT
    tokens, gain = step.expected_tokens, step.expected_gain
    assert tokens is not None and gain is not None
    plain = table.plain()
    base = [table.lookup + table.target(n + 1) for n in range(max(limit, k) + 1)]
    draft_costs = (_draft_costs(table, state, base)
                   if setting.draft and table.draft is not None else None)
    best = None
    if draft_costs is not None and limit > 0:
        costs = draft_costs[:limit + 1]
        best_k, best_tokens = best_proposal(state.rates.rates(limit), costs, plain)
        best = (best_k, best_tokens, best_tokens - costs[best_k] / plain)
    if drafted and best is not None and (best[0] != k or not _close(best[1], tokens)):
        yield (f"step {j} drafts {k} tokens expecting {tokens:.6g}; replayed from the earlier "
               f"draft steps' outcomes, the draft model's best is {best[0]} tokens expecting "
               f"{best[1]:.6g}", j, "proposed",
               {"proposed": k, "replayed_k": best[0], "replayed_tokens": best[1]})
        return
    cost = draft_costs[k] if drafted and draft_costs is not None else base[k]
    if not _close(gain, tokens * plain / cost):
        yield (f"step {j} records an expected gain of {gain:.6g}, but {tokens:.6g} expected "
               f"tokens at the profile's {cost:.6g} {table.unit} for this choice, over a plain "
               f"step's {plain:.6g}, is {tokens * plain / cost:.6g}", j, "expected_gain",
               {"expected_gain": gain, "replayed": tokens * plain / cost})
    if proposes_nothing(who) and not _close(tokens, 1.0):
        yield (f"step {j} proposes nothing but expects {tokens:.6g} tokens (a plain step "
               "yields 1)", j, "expected_tokens", {"expected_tokens": tokens})
    if proposing_of(who) is Proposing.LOOKUP and not 1.0 < tokens < k + 1:
        yield (f"step {j} expects {tokens:.6g} tokens from {k} proposed: between 1 and {k + 1} "
               "(each position's acceptance estimate lies strictly between 0 and 1)",
               j, "expected_tokens", {"expected_tokens": tokens})
    chosen = tokens - cost / plain
    none = 1.0 - base[0] / plain
    if proposing_of(who) is Proposing.LOOKUP and chosen <= none:
        yield (f"step {j} proposes {k} n-gram tokens worth {chosen:.6g} over plain at the "
               f"profile's costs, no more than proposing nothing ({none:.6g}): auto proposes "
               "only what beats a plain step", j, "proposer", {"surplus": chosen,
                                                               "none_surplus": none})
    if not drafted and best is not None and best[0] > 0 and best[2] > max(chosen, none) \
            and not _close(best[2], max(chosen, none)):
        yield (f"step {j} chose {who} (expected surplus over plain {chosen:.6g}), but drafting "
               f"{best[0]} tokens, replayed from the earlier draft steps' outcomes, was worth "
               f"{best[2]:.6g}: auto takes the draft model there", j, "proposer",
               {"surplus": chosen, "draft_surplus": best[2], "draft_k": best[0]})


def _draft_costs(table: CostTable, state: _State, base: list[float]) -> list[float]:
    """Each k's cost of drafting (auto's own sum): the mirror of the last verified batch, the
    catch-up pass, k - 1 single passes, on top of the target's pass and the lookup."""
    draft = table.draft
    if draft is None:
        return base
    mirror = draft(state.mirror) if state.mirror is not None else 0.0
    first, single = mirror + draft(state.feed), draft(1)
    return [base[0]] + [base[n] + first + (n - 1) * single for n in range(1, len(base))]


RULE = Rule(order=50, check=check)

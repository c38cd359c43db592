"""What one decoding run returns, the greedy-equivalence check against plain, and the one
conversion of a decoding result into the run record a results file holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from phase.base.errors import PhaseError
from phase.results import Pass, Run, SensorTrace, SensorWindow, Step, Verification, token_sha256

# Why a sampled run has no matches_plain: what it must equal is plain's distribution.
SAMPLED_REASON = ("sampled: equal to plain sampling in distribution (tests/test_sampling_exact.py),"
                  " not token by token; regenerable from its seed")


@dataclass
class DecodeResult:
    """One run. Times are seconds (wall clock, perf_counter) unless named otherwise.

    - prefill_s: the prompt through every model in play (all but its last token; see Engine)
    - decode_s: from the first decode step to the last; tokens_per_s = len(token_ids)/decode_s
    - steps: target forward passes in decode; drafted/accepted count proposed tokens
    - trace: one results Step per target forward pass
    - acceptance: accepted/drafted, or None with acceptance_reason when nothing was proposed
    - cpu_s: process CPU time (all threads) over the decode window, the window energy covers
    - started/ended_unix_s: the whole run; decode_started/ended_unix_s: the decode window
    - top2_gaps: per token, best minus second-best logit (plain runs asked to record them)
    - divergence_index/_gap: the first token that differs from the reference the run was given,
      and the top-2 logit gap of the pass that produced it (None when it matches or no
      reference was given)
    - overridden: None for greedy decoding; for a run that followed its reference
      (Engine.run_on_reference), the tokens where the reference overrode the target's
      argmax. Such a run is not greedy decoding and never becomes a results-file run.
    - passes: where the decode repeated inside one energy window (Engine.run's min_window_s),
      every pass's decode time and output, the first being the one the fields above describe;
      [] for a single decode
    - verification: the rule that verified a sampled run's proposals (None: greedy, or plain)
    """

    strategy: str
    k: int | None
    token_ids: list[int]
    text: str
    prompt_tokens: int
    prefill_s: float
    decode_s: float
    tokens_per_s: float
    steps: int
    drafted: int
    accepted: int
    acceptance: float | None
    acceptance_reason: str | None
    trace: list[Step]
    cpu_s: float
    started_unix_s: float
    ended_unix_s: float
    decode_started_unix_s: float
    decode_ended_unix_s: float
    n_threads: int = 0
    n_threads_batch: int = 0
    top2_gaps: list[float] | None = None
    divergence_index: int | None = None
    divergence_gap: float | None = None
    overridden: int | None = None
    passes: list[Pass] = field(default_factory=list)
    verification: Verification | None = None

    @property
    def tokens(self) -> int:
        return len(self.token_ids)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["token_ids"] = list(self.token_ids)
        out["trace"] = [s.model_dump() for s in self.trace]
        out["passes"] = [p.model_dump() for p in self.passes]
        if self.verification is None:  # greedy and plain: the records stay as they were
            del out["verification"]
        else:
            out["verification"] = self.verification.model_dump()
        return out

    def to_run(
        self,
        *,
        run_id: str,
        repeat: int,
        order: int,
        prompt: str,
        strategy: str,
        reference: Sequence[int],
        energy: list[SensorWindow],
        samples: list[SensorTrace],
        temperatures_c: dict[str, float],
        reference_gaps: Sequence[float] | None = None,
        sampled_seed: int | None = None,
    ) -> Run:
        """The results file's record of this run. `strategy` is the name the campaign plan
        uses (e.g. `ngram`, where this result's own label is `ngram-8`); `reference` is the
        plain decoding of the same prompt, which `matches_plain` compares against, and
        `reference_gaps` its per-token top-2 logit gaps (for the evidence at a divergence).
        `sampled_seed`: a sampled run's seed; such a run is not compared with the (greedy)
        reference token by token (matches_plain None with the reason).
        Long because it is one field-by-field mapping onto Run: split, a field would be
        easier to leave out than to see missing."""
        if self.overridden is not None:
            raise PhaseError("a run that followed a reference text is not greedy decoding "
                             "and cannot be recorded as a results-file run")
        matches: bool | None
        matches, divergence = compare_to_plain(self.token_ids, reference)
        gap_verify: float | None = None
        gap_reference: float | None = None
        matches_reason = None
        if sampled_seed is not None:
            matches, divergence, matches_reason = None, None, SAMPLED_REASON
        if divergence is not None:
            if self.divergence_index == divergence:
                gap_verify = self.divergence_gap
            if reference_gaps is not None and divergence < len(reference_gaps):
                gap_reference = reference_gaps[divergence]
        return Run(
            id=run_id,
            repeat=repeat,
            order=order,
            prompt=prompt,
            strategy=strategy,
            k=self.k,
            started_unix_s=self.started_unix_s,
            ended_unix_s=self.ended_unix_s,
            prompt_tokens=self.prompt_tokens,
            prefill_s=self.prefill_s,
            decode_s=self.decode_s,
            tokens=self.tokens,
            tokens_per_s=self.tokens_per_s,
            steps=self.steps,
            drafted=self.drafted,
            accepted=self.accepted,
            acceptance=self.acceptance,
            acceptance_reason=self.acceptance_reason,
            trace=list(self.trace),
            cpu_s=self.cpu_s,
            energy=energy,
            temperatures_c=temperatures_c,
            output_sha256=token_sha256(self.token_ids),
            output_text=self.text,
            token_ids=list(self.token_ids),
            matches_plain=matches,
            matches_plain_reason=matches_reason,
            first_divergence=divergence,
            divergence_gap_verify=gap_verify,
            divergence_gap_reference=gap_reference,
            samples=samples,
            passes=list(self.passes),
            seed=sampled_seed,
            verification=self.verification if sampled_seed is not None else None,
        )


def compare_to_plain(token_ids: Sequence[int], plain_ids: Sequence[int]) -> tuple[bool, int | None]:
    """(matches_plain, first_divergence_index). Greedy speculation should reproduce plain
    decoding exactly; where batched and single-token numerics pick a different argmax it will
    not, and the index says where the outputs part (None when they are identical)."""
    for i, (a, b) in enumerate(zip(token_ids, plain_ids, strict=False)):
        if a != b:
            return False, i
    if len(token_ids) != len(plain_ids):
        return False, min(len(token_ids), len(plain_ids))
    return True, None

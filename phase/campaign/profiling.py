"""The cost profile of a campaign (and of `phase profile`): which KV fills, how long a block,
energy per block from the campaign's sampler.

A campaign profiles after its plain references, so each prompt's history is the prompt plus
the tokens plain decoding really produced, and the KV fill of a prompt's point is where a run
of it is half done. `phase profile` has no references: it fills with the prompt's own tokens,
repeated (what the cache holds does not change what a pass costs).

Energy: where the sampler has sensors, every block of passes is a sampler window, so each
block's energy is read the way a run's is (counters at the edges, power integrated). A block
then lasts at least four update periods of the slowest sensor (at most MAX_BLOCK_S), so an
edge's quantisation stays a small part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from phase.campaign.disturbance import Counters, LoadProbe
from phase.campaign.experiment import Experiment
from phase.campaign.plan import CampaignPlan
from phase.campaign.prompts import campaign_prompts
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.decode import Engine
from phase.decode.profiler import ProfileContext, ProfileSettings, choose_contexts
from phase.models.sources import resolve
from phase.results import CostProfile, UnavailableBackend
from phase.sensors import Sampler, Window, assert_publishable

MAX_BLOCK_S = 0.4
PERIODS_PER_BLOCK = 4.0


class SamplerMeter:
    """A `BlockMeter` over the campaign's sampler: one sampler window per block."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self._window: Window | None = None

    def start(self) -> None:
        self._window = self.sampler.begin(idle_s=0.0)
        self._window.start()

    def stop(self) -> dict[str, float]:
        window, self._window = self._window, None
        if window is None:
            return {}
        window.stop()
        windows, _ = window.result()
        return {w.sensor: w.energy_j for w in windows if w.energy_j is not None}


class ProbeLoad:
    """A `BlockLoad` over the foreign-load probe of phase.campaign.disturbance."""

    def __init__(self, probe: LoadProbe | None = None) -> None:
        self.probe = probe or LoadProbe()
        self._before: Counters | None = None

    def start(self) -> None:
        self._before = self.probe.read()

    def stop(self) -> float | None:
        load, _ = self.probe.foreign_load(self._before, self.probe.read())
        return load


def settings_for(plan: CampaignPlan, sampler: Sampler | None) -> ProfileSettings:
    """The plan's profile settings, blocks lengthened for the slowest sensor to update; its
    blocks judged as its runs are (the load threshold, the condition's floor), unless the
    plan judges nothing."""
    block_s = plan.profile_min_block_s
    if sampler is not None:
        periods = [p.seconds for p in sampler.periods.values() if p.seconds]
        if periods:
            block_s = max(block_s, min(MAX_BLOCK_S, PERIODS_PER_BLOCK * max(periods)))
    judged = plan.disturbed_load is not None
    return ProfileSettings(blocks=plan.profile_blocks, min_block_s=block_s,
                           disturbed_load=plan.disturbed_load,
                           slow_floor=plan.slow_vs_condition if judged else None,
                           max_retries=plan.profile_max_retries if judged else 0)


def energy_reason(sampler: Sampler | None, unavailable: Sequence[UnavailableBackend]) -> str:
    """Why passes may have no energy (recorded only where none had any)."""
    if sampler is None or not sampler.sensors:
        why = "; ".join(f"{u.backend}: {u.reason}" for u in unavailable)
        return f"no energy sensor was sampled ({why})" if why else "no energy sensor was sampled"
    names = ", ".join(s.name for s in sampler.sensors)
    return (f"no sensor ({names}) had energy for every block of passes: blocks too short for "
            "its update period, or its reads failed")


def contexts(prompt_tokens: Mapping[str, list[int]], continuations: Mapping[str, list[int]],
             tokens: int) -> list[ProfileContext]:
    """One context per prompt: its prompt plus continuation as history, filled to the middle
    of a run (prompt + tokens // 2). Without a continuation the prompt repeats."""
    out = []
    for name, prompt in prompt_tokens.items():
        cont = continuations.get(name) or []
        history = list(prompt) + list(cont)
        kv = len(prompt) + tokens // 2
        while len(history) < kv + tokens // 2 + 1:
            history.extend(prompt)
        out.append(ProfileContext(name, history, kv))
    return out


def measure(engine: Engine, plan: CampaignPlan, prompt_tokens: Mapping[str, list[int]],
            continuations: Mapping[str, list[int]], sampler: Sampler | None,
            unavailable: Sequence[UnavailableBackend]) -> CostProfile:
    """The campaign's cost profile (see the module docstring)."""
    chosen = choose_contexts(contexts(prompt_tokens, continuations, plan.tokens))
    meter = SamplerMeter(sampler) if sampler is not None and sampler.sensors else None
    settings = settings_for(plan, sampler)
    loads = ProbeLoad() if settings.disturbed_load is not None else None
    return engine.profile(chosen, settings, meter, energy_reason(sampler, unavailable), loads)


def run_standalone(experiment: Experiment, plan: CampaignPlan, sensors: SensorOptions,
                   progress: Callable[[str], None]) -> CostProfile:
    """`phase profile`: the cost profile a campaign of this plan would measure, on its own
    (no references: each prompt's history is the prompt, repeated). Bad input (an unknown
    prompt, a model that is not there, a fill that does not fit) raises with exit 2."""
    prompts, _ = campaign_prompts(experiment.prompts_dir, plan.prompts, plan.workload)
    target = resolve(plan.target, progress=lambda m: progress(f"target: {m}"))
    draft = resolve(plan.draft, progress=lambda m: progress(f"draft: {m}")) if plan.draft \
        else None
    progress(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else ""))
    discovery = discover_sensors(sensors)
    sampler: Sampler | None = None
    try:
        assert_publishable(discovery.sensors)
        with Engine(str(target.path), str(draft.path) if draft else None, n_ctx=plan.n_ctx,
                    n_threads=plan.threads,
                    n_threads_batch=plan.threads_batch or plan.threads) as engine:
            tokens = {p.name: engine.format_prompt(p.text, chat_template=plan.chat_template)
                      for p in prompts}
            if discovery.sensors:
                sampler = Sampler(discovery.sensors, hz=plan.sample_hz)
                sampler.start()
            progress("timing target" + (" and draft" if draft else "") + " passes")
            return measure(engine, plan, tokens, {}, sampler, discovery.unavailable)
    finally:
        if sampler is not None:
            sampler.close()
        discovery.close()


def summary_line(profile: CostProfile) -> str:
    """One line for the terminal: the costs that decide most, at the highest fill."""
    point = max(profile.points, key=lambda p: p.kv_tokens)
    target = {c.tokens: c.ms for c in point.target}
    draft = {c.tokens: c.ms for c in point.draft}
    parts = [f"plain step {target[1]:.1f} ms", f"9-token verification {target.get(9, 0):.1f} ms"]
    if 1 in draft:
        parts.append(f"draft token {draft[1]:.1f} ms")
    return (f"cost profile at KV {point.kv_tokens}: " + ", ".join(parts)
            + f" ({profile.wall_s:.0f} s)" + disturbed_text(profile))


def disturbed_text(profile: CostProfile) -> str:
    """"; N disturbed blocks repeated" (and the passes none of whose blocks was quiet), or
    nothing where no block was disturbed."""
    costs = [c for p in profile.points for c in [*p.target, *p.draft]]
    bad = sum(c.block_disturbed.count(True) for c in costs)
    if not bad:
        return ""
    stuck = [c for c in costs if c.block_disturbed and all(c.block_disturbed)]
    text = f"; {bad} disturbed block(s) repeated and left out of the medians"
    if stuck:
        text += (f"; {len(stuck)} pass size(s) had no undisturbed block after the retries: "
                 "their costs rest on disturbed blocks (profile again on a quiet machine)")
    return text


def table_lines(profile: CostProfile) -> list[str]:
    """The profile as a plain-text table per point: b, target ms (spread), draft ms, and
    joules per pass where a sensor read."""
    lines: list[str] = []
    for point in profile.points:
        where = f"prompt '{point.prompt}'" if point.prompt else "given fill"
        lines.append(f"KV fill {point.kv_tokens} tokens ({where})")
        draft = {c.tokens: c for c in point.draft}
        header = f"{'b':>4} {'target ms':>10} {'spread':>7} {'draft ms':>9}"
        sensors = sorted({n for c in point.target for n in c.energy_j})
        header += "".join(f" {('J ' + n)[:14]:>14}" for n in sensors)
        lines.append(header)
        for cost in point.target:
            d = draft.get(cost.tokens)
            row = (f"{cost.tokens:>4} {cost.ms:>10.2f} "
                   f"{_pct(cost.ms_spread):>7} {(f'{d.ms:.2f}' if d else '-'):>9}")
            row += "".join(f" {cost.energy_j[n]:>14.4f}" if n in cost.energy_j else
                           f" {'-':>14}" for n in sensors)
            lines.append(row)
        extra = [c for c in point.draft if c.tokens not in {t.tokens for t in point.target}]
        lines.extend(f"{c.tokens:>4} {'-':>10} {'':>7} {c.ms:>9.2f}" for c in extra)
    lookup = (f"{profile.ngram_lookup_ms * 1e3:.1f} µs" if profile.ngram_lookup_ms is not None
              else f"n/a ({profile.ngram_lookup_ms_reason})")
    lines.append(f"n-gram lookup: {lookup}")
    if profile.draft_reason:
        lines.append(f"draft: {profile.draft_reason}")
    if profile.energy_reason:
        lines.append(f"energy: none ({profile.energy_reason})")
    lines.append(f"{profile.blocks} blocks of >= {profile.min_block_s:g} s per size; "
                 f"{profile.wall_s:.1f} s in all")
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"

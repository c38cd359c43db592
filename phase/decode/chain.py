"""Plain sampled decoding's draws: llama.cpp's own sampler chain, seeded.

The chain is top-k, top-p, min-p, temperature, dist: llama.cpp's common sampler order
(phase.policy.sampling explains it and mirrors it in numpy for speculative verification).
Each sampler is added only when it is on, as common_sampler_init leaves out nothing but
relies on each being a no-op at its default; leaving them out keeps the chain honest about
what runs. `dist` is seeded with the settings' seed, so a run is reproducible from it.
"""

from __future__ import annotations

import llama_cpp

from phase.decode.native import NativeModel
from phase.policy.sampling import SamplingSettings

# top-p and min-p keep at least this many tokens (llama.cpp's default min_keep for both).
MIN_KEEP = 1


class SamplerChain:
    """A llama.cpp sampler chain for `settings`; freed on close (or leaving a with block)."""

    def __init__(self, settings: SamplingSettings) -> None:
        self.settings = settings
        params = llama_cpp.llama_sampler_chain_default_params()
        params.no_perf = True
        self._chain = llama_cpp.llama_sampler_chain_init(params)
        add = llama_cpp.llama_sampler_chain_add
        if settings.top_k > 0:
            add(self._chain, llama_cpp.llama_sampler_init_top_k(settings.top_k))
        if settings.top_p < 1.0:
            add(self._chain, llama_cpp.llama_sampler_init_top_p(settings.top_p, MIN_KEEP))
        if settings.min_p > 0.0:
            add(self._chain, llama_cpp.llama_sampler_init_min_p(settings.min_p, MIN_KEEP))
        add(self._chain, llama_cpp.llama_sampler_init_temp(settings.temperature))
        add(self._chain, llama_cpp.llama_sampler_init_dist(settings.seed))

    def sample(self, model: NativeModel, i: int = 0) -> int:
        """A token drawn from the i-th logits row of the model's last decode."""
        if self._chain is None:
            raise ValueError("this sampler chain is closed")
        return model.sample(self._chain, i)

    def close(self) -> None:
        if self._chain is not None:
            llama_cpp.llama_sampler_free(self._chain)
            self._chain = None

    def __enter__(self) -> SamplerChain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

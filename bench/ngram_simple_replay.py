"""Does phase.policy.ngram_simple draft as llama-server's `--spec-type ngram-simple` does?

llama-server answers each prompt alone (one slot, greedy), with its output tokens and its own
draft counts (timings.draft_n, draft_n_accepted). Replaying greedy speculation over the
server's own output with phase's port of the rule (at each step: the port's draft from the
history and the token just sampled, cut to the tokens still to generate minus one; the drafts
kept are those equal to what the server went on to emit) must give the server's counts
exactly. At N > 1 the two sides' outputs may differ (batched numerics flip near ties), so
this compares the rule, not the batching.

    .venv/bin/python -m bench.ngram_simple_replay [MODEL] [TOKENS]

MODEL: an embedded name (default qwen2.5-coder-1.5b); TOKENS per request (default 96). The
server is built by bench/server_build.py (minutes, once). Prints one line per prompt and the
totals; exits 1 where any count differs.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.decode_bench import PROMPTS
from bench.llama_server import LlamaServer, ServerSettings
from bench.server_build import ensure_server
from phase.campaign.prompts import load_prompt
from phase.decode import Engine
from phase.models.sources import resolve
from phase.policy.ngram_simple import simple_draft
from phase.policy.strategies import parse_strategy

SIZE_N, SIZE_M = 6, 8  # the serving_reference bench's settings (ngram_n_min, NGRAM_K)
PROMPT_NAMES = ("edit", "code", "prose")


def replay(prompt: Sequence[int], out: Sequence[int], n_predict: int,
           is_end: Callable[[int], bool]) -> tuple[int, int]:
    """(drafted, kept) of greedy ngram-simple speculation that emitted `out` after `prompt`."""
    drafted = kept = 0
    at = 0  # out[at] is the token just sampled
    while at < len(out):
        remaining = n_predict - (at + 1)
        if remaining <= 1 or is_end(out[at]):
            break
        draft = simple_draft([*prompt, *out[:at]], out[at], SIZE_N, SIZE_M)[:remaining - 1]
        n = 0
        while n < len(draft) and at + 1 + n < len(out) and draft[n] == out[at + 1 + n]:
            n += 1
        drafted, kept, at = drafted + len(draft), kept + n, at + n + 1
    return drafted, kept


def main(argv: list[str]) -> int:
    model = resolve(argv[0] if argv else "qwen2.5-coder-1.5b").path
    n_predict = int(argv[1]) if len(argv) > 1 else 96
    strategy = parse_strategy(f"ngram-simple-{SIZE_M}", ngram_n_min=SIZE_N)
    differ = 0
    with Engine(model, None, n_ctx=4096, n_threads=2) as engine, \
            tempfile.TemporaryDirectory() as tmp:
        prompts = [engine.format_prompt(load_prompt(PROMPTS / f"{n}.txt").text)
                   for n in PROMPT_NAMES]
        settings = ServerSettings(model, 1, 2, 4096, strategy)
        with LlamaServer(ensure_server(), settings, Path(tmp) / "server.log") as server:
            for name, prompt in zip(PROMPT_NAMES, prompts, strict=True):
                answer = server.complete(prompt, n_predict)
                assert answer.tokens is not None, "the server sent no tokens back"
                ours = replay(prompt, answer.tokens, n_predict, engine.target.is_end)
                theirs = (answer.drafted, answer.accepted)
                differ += ours != theirs
                print(f"{name}: {len(answer.tokens)} tokens; llama-server drafted {theirs[0]}, "
                      f"kept {theirs[1]}; phase's port on the same output drafted {ours[0]}, "
                      f"kept {ours[1]}{'' if ours == theirs else '  DIFFERS'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

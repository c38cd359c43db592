"""Does phase.policy.ngram_simple draft as llama-server's `--spec-type ngram-simple` does?

llama-server answers each prompt alone (one slot, greedy), with its output tokens and its own
draft counts (timings.draft_n, draft_n_accepted). Replaying greedy speculation over the
server's own output with phase's port of the rule (at each step: the port's draft from the
history and the token just sampled, cut to the tokens still to generate minus one; the drafts
kept are those equal to what the server went on to emit) must give the server's counts
exactly.

With CONCURRENCY > 1 the server serves the serving_reference bench's closed loop at that
many slots (its request order, each client sending twice) and the replay runs over each
request's own output; each output is also compared with plain single-request greedy decoding
(phase's), which tells where the server's batched passes changed what it emitted.

    .venv/bin/python -m bench.ngram_simple_replay [MODEL] [TOKENS] [CONCURRENCY]

MODEL: an embedded name (default qwen2.5-coder-1.5b); TOKENS per request (default 96);
CONCURRENCY (default 1). The server is built by bench/server_build.py (minutes, once).
Prints one line per prompt (or per loop) and exits 1 where any count differs.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.decode_bench import PROMPTS
from bench.llama_server import LlamaServer, ServerSettings, closed_loop
from bench.server_build import ensure_server
from bench.serving_reference import request_order
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


def _loop(server: LlamaServer, engine: Engine, prompts: list[list[int]], n_predict: int,
          concurrency: int) -> int:
    """The bench's closed loop at `concurrency`: counts on both sides, outputs against plain."""
    plain = []
    for prompt in prompts:
        ids = engine.run(prompt, parse_strategy("plain"), n_predict).token_ids
        end = next((j + 1 for j, t in enumerate(ids) if engine.target.is_end(t)), len(ids))
        plain.append(list(ids[:end]))
    order = request_order(len(prompts), concurrency)
    records = closed_loop(lambda p: server.complete(prompts[p], n_predict, p), order,
                          concurrency)
    theirs, ours, changed = [0, 0], [0, 0], 0
    for r in records:
        assert r.tokens is not None, "the server sent no tokens back"
        d, k = replay(prompts[r.prompt_index], r.tokens, n_predict, engine.target.is_end)
        theirs = [theirs[0] + r.drafted, theirs[1] + r.accepted]
        ours = [ours[0] + d, ours[1] + k]
        changed += list(r.tokens) != plain[r.prompt_index][:len(r.tokens)]
    print(f"N={concurrency}, {len(records)} requests: llama-server drafted {theirs[0]}, kept "
          f"{theirs[1]}; phase's port on the same outputs drafted {ours[0]}, kept {ours[1]}; "
          f"{changed} of {len(records)} outputs differ from plain single-request decoding"
          f"{'' if ours == theirs else '  DIFFERS'}")
    return int(ours != theirs)


def main(argv: list[str]) -> int:
    model = resolve(argv[0] if argv else "qwen2.5-coder-1.5b").path
    n_predict = int(argv[1]) if len(argv) > 1 else 96
    concurrency = int(argv[2]) if len(argv) > 2 else 1
    strategy = parse_strategy(f"ngram-simple-{SIZE_M}", ngram_n_min=SIZE_N)
    differ = 0
    with Engine(model, None, n_ctx=4096, n_threads=2) as engine, \
            tempfile.TemporaryDirectory() as tmp:
        prompts = [engine.format_prompt(load_prompt(PROMPTS / f"{n}.txt").text)
                   for n in PROMPT_NAMES]
        settings = ServerSettings(model, concurrency, 2, 4096, strategy)
        with LlamaServer(ensure_server(), settings, Path(tmp) / "server.log") as server:
            if concurrency > 1:
                return _loop(server, engine, prompts, n_predict, concurrency)
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

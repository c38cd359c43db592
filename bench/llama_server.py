"""Drive llama.cpp's `llama-server` (bench/server_build.py builds it): start it with parallel
slots and a speculation setting, send it a closed loop of /completion requests, read back
what it measured.

The server runs what phase's batched decoder runs: `-np N` slots with continuous batching,
one unified KV buffer (`--kv-unified`, as phase's context with n_seq_max = N), the same
threads for single-token and batched passes, no GPU layers, no prompt cache (each request
prefills its whole prompt, as each phase request does). Requests carry the prompt as token
ids, so both sides decode exactly the same tokens, and greedy settings; a request ends after
n_predict tokens or at end-of-generation, as a `phase.policy.batching.Request` does (greedy
outputs are equal on both sides, so they end at the same token).

phase strategies map onto the server's speculation settings (`speculation_flags`):
plain is none; `ngram-simple-K` is `--spec-type ngram-simple`, which proposes the up to K
tokens that followed the most recent earlier occurrence of the last n tokens (n = phase's
ngram_n_min): phase.policy.ngram_simple is the same rule, so both sides make the same
proposals. Phase's own `ngram-K` maps there too, but it is another rule (the occurrence
with the longest context, keys up to ngram_n_max), so its acceptance may differ;
`draft-K` is `--spec-type draft-simple` with the draft model, at most K tokens per step,
never cut short by the draft's confidence (as bench/native.py runs llama-speculative-simple).
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.native import NativeError
from phase.policy.strategies import Proposing, Strategy

HEALTH_TIMEOUT_S = 300.0  # model load and warm-up on a slow, shared machine
REQUEST_TIMEOUT_S = 1800.0
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class ServerSettings:
    """Everything a server run is started with. `n_ctx` is per slot: the server gets
    n_ctx x slots in one unified buffer, so any request may use n_ctx tokens."""

    model: Path
    slots: int
    threads: int
    n_ctx: int
    strategy: Strategy
    draft: Path | None = None
    # phase.decode.cpu_buffers' decision: the server must run the same kernels.
    extra_buffers: bool = True

    def args(self, binary: Path, port: int) -> list[str]:
        return [str(binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(port),
                "-np", str(self.slots), "-c", str(self.n_ctx * self.slots), "--kv-unified",
                "-cb", "-t", str(self.threads), "-tb", str(self.threads), "-ngl", "0",
                "--no-webui", "--no-cache-prompt", "--cache-ram", "0", "--fit", "off",
                *([] if self.extra_buffers else ["--no-repack"]),
                *speculation_flags(self.strategy, self.draft)]


def speculation_flags(strategy: Strategy, draft: Path | None) -> list[str]:
    """The server's speculation options for a phase strategy; NativeError for one the
    server has no counterpart of (auto, adaptive ngram) or a draft strategy without a draft."""
    k, family = strategy.max_proposal, strategy.family
    if family.decides:  # a per-step choice (auto): the server has none
        pass
    elif family.proposing is Proposing.NONE:
        return []
    elif family.proposing is Proposing.LOOKUP and not strategy.adaptive:
        return ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n",
                str(strategy.ngram_n_min), "--spec-ngram-simple-size-m", str(k),
                "--spec-ngram-simple-min-hits", "1"]
    elif family.proposing is Proposing.DRAFT:
        if draft is None:
            raise NativeError(f"{strategy.label} needs a draft model for llama-server (-md)")
        return ["--spec-type", "draft-simple", "-md", str(draft), "--spec-draft-n-max", str(k),
                "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "--spec-draft-ngl", "0"]
    raise NativeError(f"llama-server has no counterpart of phase's {strategy.label}; use "
                      "plain, ngram-K or draft-K")


def completion_body(prompt: Sequence[int], n_predict: int) -> dict[str, Any]:
    """A /completion request: greedy, at most n_predict tokens, the tokens sent back."""
    return {"prompt": list(prompt), "n_predict": n_predict, "temperature": 0.0, "top_k": 1,
            "seed": 0, "ignore_eos": False, "cache_prompt": False, "stream": False,
            "return_tokens": True}


# --- one request ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestRecord:
    """One request as the client saw it (perf_counter seconds) and as the server timed it."""

    prompt_index: int
    sent_s: float
    done_s: float
    prompt_n: int
    predicted_n: int
    predicted_per_second: float
    drafted: int
    accepted: int
    tokens: tuple[int, ...] | None

    @property
    def latency_s(self) -> float:
        return self.done_s - self.sent_s


def _int(timings: dict[str, Any], name: str) -> int:
    value = timings.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NativeError(f"llama-server: timings.{name} is {value!r}, not a number "
                          "(its response format changed?)")
    return int(value)


def parse_response(response: dict[str, Any], prompt_index: int, sent_s: float,
                   done_s: float) -> RequestRecord:
    """A /completion response's timings. draft_n and draft_n_accepted are absent where the
    server drafted nothing for the request: zero then."""
    timings = response.get("timings")
    if not isinstance(timings, dict):
        raise NativeError("llama-server: a /completion response without timings")
    tps = timings.get("predicted_per_second")
    if not isinstance(tps, int | float):
        raise NativeError(f"llama-server: timings.predicted_per_second is {tps!r}")
    tokens = response.get("tokens")
    return RequestRecord(
        prompt_index=prompt_index, sent_s=sent_s, done_s=done_s,
        prompt_n=_int(timings, "prompt_n"), predicted_n=_int(timings, "predicted_n"),
        predicted_per_second=float(tps),
        drafted=_int(timings, "draft_n") if "draft_n" in timings else 0,
        accepted=_int(timings, "draft_n_accepted") if "draft_n_accepted" in timings else 0,
        tokens=tuple(int(t) for t in tokens) if isinstance(tokens, list) else None)


def _post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            data = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        raise NativeError(f"llama-server answered {exc.code} to {url}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise NativeError(f"llama-server: {url} failed: {exc}") from None
    if not isinstance(data, dict):
        raise NativeError(f"llama-server: {url} answered {type(data).__name__}, not an object")
    return data


# --- the server process ---------------------------------------------------------------------


def free_port() -> int:
    """A local port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """A running llama-server: `with LlamaServer(binary, settings, log) as server:` starts
    it on a free port and waits until /health answers; leaving the block in any way (an
    error, Ctrl-C) stops it. Its output goes to `log_path`, whose tail an error quotes."""

    def __init__(self, binary: Path, settings: ServerSettings, log_path: Path) -> None:
        self.binary = binary
        self.settings = settings
        self.log_path = log_path
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        self.port = free_port()
        args = self.settings.args(self.binary, self.port)
        with self.log_path.open("wb") as log:
            log.write((" ".join(args) + "\n\n").encode())
            log.flush()
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise NativeError(f"llama-server exited with {self._proc.returncode} before "
                                  f"it was ready:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # loading the model (503) or not listening yet
            time.sleep(0.2)
        raise NativeError(f"llama-server was not ready within {HEALTH_TIMEOUT_S:.0f} s:\n"
                          f"{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (the server finishes its shutdown), then SIGKILL if it hangs."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def complete(self, prompt: Sequence[int], n_predict: int, prompt_index: int = 0
                 ) -> RequestRecord:
        sent = time.perf_counter()
        response = _post(f"{self.url}/completion", completion_body(prompt, n_predict),
                         REQUEST_TIMEOUT_S)
        return parse_response(response, prompt_index, sent, time.perf_counter())


# --- the closed loop ------------------------------------------------------------------------


def closed_loop(send: Callable[[int], RequestRecord], order: Sequence[int],
                concurrency: int) -> list[RequestRecord]:
    """`concurrency` clients, each sending its next request as soon as its last one is
    answered, until every prompt index in `order` has been sent once (in that order).
    The first error stops the clients from sending more and is raised once all are done."""
    lock = threading.Lock()
    queue = list(order)
    done: list[RequestRecord] = []
    errors: list[BaseException] = []

    def client() -> None:
        while True:
            with lock:
                if errors or not queue:
                    return
                index = queue.pop(0)
            try:
                record = send(index)
            except BaseException as exc:  # handed to the caller's thread below
                with lock:
                    errors.append(exc)
                return
            with lock:
                done.append(record)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sorted(done, key=lambda r: r.sent_s)


@dataclass(frozen=True)
class Aggregate:
    """A run's aggregate figures. tokens_per_s is output tokens over the run's wall time,
    first request sent to last answered (prefill and queueing included, as serving
    benchmarks count it); acceptance is accepted over drafted tokens, None where nothing
    was drafted."""

    requests: int
    output_tokens: int
    wall_s: float
    drafted: int
    accepted: int

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "output_tokens": self.output_tokens,
                "wall_s": self.wall_s, "tokens_per_s": self.tokens_per_s,
                "drafted": self.drafted, "accepted": self.accepted,
                "acceptance": self.acceptance}


def aggregate(records: Sequence[RequestRecord]) -> Aggregate:
    if not records:
        raise NativeError("llama-server: a run with no answered requests")
    return Aggregate(
        requests=len(records), output_tokens=sum(r.predicted_n for r in records),
        wall_s=max(r.done_s for r in records) - min(r.sent_s for r in records),
        drafted=sum(r.drafted for r in records), accepted=sum(r.accepted for r in records))

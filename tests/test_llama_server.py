"""bench/llama_server.py without building llama-server (tens of minutes): the command line a
phase strategy becomes, a recorded real /completion response read back, the closed loop's
concurrency, the aggregate figures, and the process kept alive and stopped on every exit path
(the process here is a small Python HTTP server answering like llama-server, with the
recorded response).

fixtures/llama_server/*.json are real responses of the llama-server that bench/server_build.py
built from llama-cpp-python 0.3.36's llama.cpp, to one request each (n_predict 16, the
smollm2-135m test model, -np 2): plain.json with no speculation, ngram.json with ngram-8 on
a prompt that repeats the alphabet, so its timings carry draft_n and draft_n_accepted."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.llama_server import (
    LlamaServer,
    RequestRecord,
    ServerSettings,
    aggregate,
    closed_loop,
    completion_body,
    parse_response,
    speculation_flags,
)
from bench.native import NativeError
from phase.policy.strategies import parse_strategy

FIXTURES = Path(__file__).parent / "fixtures" / "llama_server"


def recorded(name: str) -> dict[str, object]:
    data = json.loads((FIXTURES / name).read_text())
    assert isinstance(data, dict)
    return data


def settings(label: str, slots: int = 4, extra_buffers: bool = True) -> ServerSettings:
    return ServerSettings(Path("/m/target.gguf"), slots, 3, 1024, parse_strategy(label),
                          extra_buffers=extra_buffers)


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_plain_runs_n_slots_in_one_unified_buffer_with_phase_threads_and_no_prompt_cache(
        ) -> None:
    args = settings("plain").args(Path("/bin/llama-server"), 8123)
    assert args[0] == "/bin/llama-server"
    assert flag(args, "-np") == "4" and flag(args, "-c") == str(4 * 1024)
    assert flag(args, "-t") == flag(args, "-tb") == "3"
    assert flag(args, "--port") == "8123" and flag(args, "--host") == "127.0.0.1"
    assert flag(args, "-ngl") == "0" and flag(args, "--cache-ram") == "0"
    assert {"--kv-unified", "--no-cache-prompt", "--no-webui"} <= set(args)
    assert "--spec-type" not in args and "--no-repack" not in args
    assert "--no-repack" in settings("plain", extra_buffers=False).args(Path("s"), 1)


@pytest.mark.parametrize("label", ["ngram-8", "ngram-simple-8"])
def test_ngram_k_is_ngram_simple_keyed_on_phases_shortest_match_drafting_k(label: str) -> None:
    strategy = parse_strategy(label, ngram_n_min=5)
    args = speculation_flags(strategy, None)
    assert flag(args, "--spec-type") == "ngram-simple"
    assert flag(args, "--spec-ngram-simple-size-m") == "8"
    assert flag(args, "--spec-ngram-simple-size-n") == "5"
    assert "-md" not in args


def test_draft_k_uses_the_draft_model_never_cut_short() -> None:
    args = speculation_flags(parse_strategy("draft-4"), Path("/m/draft.gguf"))
    assert flag(args, "--spec-type") == "draft-simple" and flag(args, "-md") == "/m/draft.gguf"
    assert flag(args, "--spec-draft-n-max") == "4"
    assert flag(args, "--spec-draft-p-min") == "0" and flag(args, "--spec-draft-n-min") == "0"
    with pytest.raises(NativeError, match="needs a draft model"):
        speculation_flags(parse_strategy("draft-4"), None)


@pytest.mark.parametrize("label", ["auto", "ngram"])
def test_strategies_without_a_server_counterpart_are_refused(label: str) -> None:
    # bare `ngram` adapts its length; the server's n-gram drafts have a fixed maximum
    with pytest.raises(NativeError, match="no counterpart"):
        speculation_flags(parse_strategy(label), Path("d"))


def test_a_request_is_greedy_with_the_prompt_as_token_ids() -> None:
    body = completion_body((1, 2, 3), 16)
    assert body["prompt"] == [1, 2, 3] and body["n_predict"] == 16
    assert body["temperature"] == 0.0 and body["top_k"] == 1
    assert body["cache_prompt"] is False and body["return_tokens"] is True
    assert body["ignore_eos"] is False  # a phase Request also ends at end-of-generation
    json.dumps(body)  # what urllib sends


def test_a_recorded_plain_response_reads_back() -> None:
    record = parse_response(recorded("plain.json"), 2, 10.0, 10.5)
    assert record.prompt_index == 2 and record.latency_s == pytest.approx(0.5)
    assert record.predicted_n == 16 and record.predicted_per_second > 0
    assert record.drafted == record.accepted == 0  # absent: nothing drafted
    assert record.tokens is not None and len(record.tokens) == record.predicted_n


def test_a_recorded_ngram_response_carries_its_draft_counts() -> None:
    record = parse_response(recorded("ngram.json"), 0, 0.0, 1.0)
    assert record.drafted > 0 and 0 <= record.accepted <= record.drafted


def test_a_response_without_timings_is_an_error_naming_the_field() -> None:
    with pytest.raises(NativeError, match="without timings"):
        parse_response({"content": "x"}, 0, 0.0, 1.0)
    broken = recorded("plain.json")
    timings = broken["timings"]
    assert isinstance(timings, dict)
    broken["timings"] = {**timings, "predicted_n": None}
    with pytest.raises(NativeError, match=r"timings\.predicted_n"):
        parse_response(broken, 0, 0.0, 1.0)


def _record(index: int, sent: float, done: float, n: int, drafted: int = 0,
            accepted: int = 0) -> RequestRecord:
    return RequestRecord(index, sent, done, 10, n, n / (done - sent), drafted, accepted, None)


def test_aggregate_is_output_tokens_over_first_send_to_last_answer() -> None:
    agg = aggregate([_record(0, 1.0, 3.0, 20, 10, 6), _record(1, 1.5, 5.0, 30, 10, 2)])
    assert agg.output_tokens == 50 and agg.wall_s == pytest.approx(4.0)
    assert agg.tokens_per_s == pytest.approx(12.5)
    assert agg.acceptance == pytest.approx(8 / 20)
    assert aggregate([_record(0, 0.0, 1.0, 5)]).acceptance is None
    with pytest.raises(NativeError):
        aggregate([])


def test_closed_loop_keeps_exactly_n_requests_in_flight_and_sends_each_once() -> None:
    lock = threading.Lock()
    in_flight, most = 0, 0
    sent: list[int] = []

    def send(index: int) -> RequestRecord:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            sent.append(index)
        start = time.perf_counter()
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        return _record(index, start, time.perf_counter(), 4)

    order = [2, 0, 1, 2, 0, 1, 2, 0]
    records = closed_loop(send, order, 3)
    assert most == 3
    assert sent == order  # taken in order, each once
    assert sorted(r.prompt_index for r in records) == sorted(order)


def test_closed_loop_stops_sending_after_an_error_and_raises_it() -> None:
    calls: list[int] = []

    def send(index: int) -> RequestRecord:
        calls.append(index)
        if index == 1:
            raise NativeError("server fell over")
        time.sleep(0.01)
        return _record(index, 0.0, 1.0, 1)

    with pytest.raises(NativeError, match="fell over"):
        closed_loop(send, list(range(20)), 2)
    assert len(calls) < 20


# --- the process ----------------------------------------------------------------------------

FAKE_SERVER = '''
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
reply = open(sys.argv[0] + ".json", "rb").read()
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _send(self, body):
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        self._send(b'{"status": "ok"}')
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["n_predict"] == 16
        self._send(reply)
print("listening", port, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def fake_binary(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "llama-server"
    path.write_text(f"#!{sys.executable}\n{source}")
    path.chmod(0o755)
    Path(f"{path}.json").write_bytes((FIXTURES / "plain.json").read_bytes())
    return path


def test_a_server_answers_requests_and_is_stopped_when_the_block_raises(
        tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, FAKE_SERVER)
    server = LlamaServer(binary, settings("plain", slots=2), tmp_path / "server.log")
    with pytest.raises(KeyboardInterrupt), server:
        assert server.port > 0
        proc = server._proc
        assert proc is not None
        records = closed_loop(lambda i: server.complete([1, 2, 3], 16, i), [0, 1, 0], 2)
        assert [r.predicted_n for r in records] == [16, 16, 16]
        raise KeyboardInterrupt
    assert proc.poll() is not None and server._proc is None  # stopped, and reaped
    assert "-np 2" in (tmp_path / "server.log").read_text()  # the command line, logged


def test_a_server_that_exits_before_ready_is_an_error_quoting_its_output(
        tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, 'print("error: unknown argument: --kv-unified")\n'
                                   "raise SystemExit(1)\n")
    server = LlamaServer(binary, settings("plain"), tmp_path / "server.log")
    with pytest.raises(NativeError, match=r"exited with 1 before it was ready:\n"
                       r"(.|\n)*unknown argument: --kv-unified"), server:
        pass

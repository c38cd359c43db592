"""`phase generate`: one generation with one strategy, greedy or sampled, and its numbers;
or, with `--workload` (and `--concurrency N`), a workload's prompts served N at a time by the
batched loop (phase.campaign.generate_many), a row per request and the run's figures."""

from __future__ import annotations

import json
from typing import TextIO

import click

from phase.base.errors import UsageProblem
from phase.campaign import DEFAULT_PLAN
from phase.campaign.generate_many import ManyRequest, generate_many
from phase.campaign.generate_many_view import aggregate_lines, table_lines
from phase.cli.common import say
from phase.decode.generate import GenerateRequest, generate, summary_lines
from phase.policy.sampling import SamplingSettings


@click.command("generate", epilog="Exit status: 0 generated; 1 a model or decoding failure "
               "(or an embedded workload that could not be fetched); 2 bad input (unknown "
               "strategy or model, an unreadable prompt file, a malformed workload file, named "
               "by line and field, a count below 1, a prompt that does not fit the context, a "
               "sampler setting out of range: checked before the model loads).")
@click.option("--model", "model", default=DEFAULT_PLAN.target, show_default=True,
              help="Target model: an embedded name, a .gguf path, or hf:REPO/FILE.")
@click.option("--draft", default=None, help="Draft model for draft-K, and for auto to draft "
              "with (name or path).")
@click.option("--strategy", default="plain", show_default=True,
              help="plain, draft-K (e.g. draft-4), ngram (copies from the context, its "
              "length adapting up to 16 tokens), ngram-K (at most K every step), ngram-simple-K "
              "(llama.cpp's n-gram rule, as llama-server's --spec-type ngram-simple) or auto "
              "(which first profiles the models' pass costs).")
@click.option("--tokens", "n_tokens", type=click.IntRange(min=1), default=128, show_default=True,
              help="Exactly this many tokens are generated (end-of-sequence is ignored); "
              "with --workload, each request's budget: it also ends at end-of-generation, as a "
              "server's would.")
@click.option("--prompt", default=None, help="The user message.")
@click.option("--prompt-file", type=click.File("r", encoding="utf-8"), default=None,
              help="Read the user message from a file ('-' for stdin).")
@click.option("--workload", default=None, help="Serve many prompts instead of one: a JSONL file "
              "(one {\"prompt\": ..., \"id\": ..., \"category\": ...} per line, id and "
              "category optional) or an embedded name (humaneval, mt-bench, edit), through "
              "the batched loop; prints a row per request and the run's figures. Not with "
              "--prompt or --prompt-file.")
@click.option("--concurrency", type=int, default=None, help="With --workload: requests decoded "
              "at once (a closed loop: the next is admitted as one finishes) [default: 1]")
@click.option("--requests", "n_requests", type=int, default=None, help="With --workload: how "
              "many requests to send, prompts drawn in a seeded order (--seed when sampling, "
              "else 0), each equally often [default: every prompt once]")
@click.option("--raw", is_flag=True, help="Send the prompt as given, without the chat template.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads [default: physical cores].")
@click.option("--ctx", "n_ctx", type=click.IntRange(min=16), default=DEFAULT_PLAN.n_ctx,
              show_default=True, help="Context size (prompt + generated tokens must fit); with "
              "--workload, each request's (one KV buffer holds --concurrency of them).")
@click.option("--compare-plain", is_flag=True,
              help="Also decode plainly and report whether the output is the same (with "
              "--workload: each request against its prompt decoded alone).")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
@click.option("--temperature", type=float, default=0.0, show_default=True,
              help="0: greedy. Above 0: sample as sampled campaigns do (llama.cpp's chain for "
              "plain, rejection sampling for a proposer: the same distribution).")
@click.option("--top-k", type=int, default=None, help="Keep the K most likely tokens "
              "(an integer >= 0; 0: off) [default: 0]")
@click.option("--top-p", type=float, default=None, help="Keep the most likely tokens up to "
              "this probability (in (0, 1]; 1: off) [default: 1]")
@click.option("--min-p", type=float, default=None, help="Drop tokens less likely than this "
              "fraction of the most likely (in [0, 1); 0: off) [default: 0]")
@click.option("--seed", type=int, default=None, help="Seed of the draws (0..4294967294): the "
              "same seed, strategy and settings give the same text again [default: 0]")
def generate_command(model: str, draft: str | None, strategy: str, n_tokens: int,
                     prompt: str | None, workload: str | None, concurrency: int | None,
                     n_requests: int | None, prompt_file: TextIO | None, raw: bool,
                     threads: int | None, n_ctx: int, compare_plain: bool,
                     as_json: bool, temperature: float, top_k: int | None,
                     top_p: float | None, min_p: float | None, seed: int | None) -> None:
    """Generate with one decoding strategy (greedy, or sampled with --temperature) and print
    the text and its numbers; or serve a workload's prompts, --concurrency at a time, and
    print a row per request (TTFT, TPOT, E2E, acceptance) and the run's figures."""
    from phase.decode.cores import check_thread_counts

    check_thread_counts([threads], "--threads")
    sampling = _sampling(temperature, top_k, top_p, min_p, seed)
    if workload is not None or concurrency is not None or n_requests is not None:
        if workload is None:
            raise UsageProblem(f"{'--concurrency' if concurrency is not None else '--requests'}"
                               ": serves a workload's prompts; give --workload FILE.jsonl (or "
                               "an embedded name: humaneval, mt-bench, edit)")
        if prompt is not None or prompt_file is not None:
            raise UsageProblem("--workload: gives the prompts; leave out --prompt and "
                               "--prompt-file")
        at_once = 1 if concurrency is None else concurrency
        _many(ManyRequest(model=model, draft=draft, strategy=strategy, workload=workload,
                          n_tokens=n_tokens, n_ctx=n_ctx, concurrency=at_once,
                          n_requests=n_requests, raw=raw, threads=threads,
                          compare_plain=compare_plain, sampling=sampling), as_json)
        return
    if prompt is not None and prompt_file is None:
        text = prompt
    elif prompt is None and prompt_file is not None:
        try:
            text = prompt_file.read()
        except UnicodeDecodeError as exc:
            raise UsageProblem(f"{prompt_file.name}: not UTF-8 text (byte 0x"
                               f"{exc.object[exc.start]:02x} at offset {exc.start})") from None
    else:
        raise click.UsageError("give exactly one of --prompt, --prompt-file or --workload")
    record = generate(
        GenerateRequest(model=model, draft=draft, strategy=strategy, n_tokens=n_tokens,
                        prompt=text, raw=raw, threads=threads, n_ctx=n_ctx,
                        compare_plain=compare_plain, sampling=sampling),
        progress=say,
    )
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    click.echo(record["text"])
    for line in summary_lines(record):
        say(line)


def _many(request: ManyRequest, as_json: bool) -> None:
    record = generate_many(request, progress=say)
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    for line in table_lines(record):
        click.echo(line)
    click.echo("")
    for line in aggregate_lines(record):
        click.echo(line)


def _sampling(temperature: float, top_k: int | None, top_p: float | None, min_p: float | None,
              seed: int | None) -> SamplingSettings | None:
    """The sampler settings, checked (with their allowed ranges) by the campaigns' own
    SamplingSettings; None for greedy decoding, where a sampler option would mean nothing."""
    given = [name for name, value in (("--top-k", top_k), ("--top-p", top_p),
                                      ("--min-p", min_p), ("--seed", seed)) if value is not None]
    if temperature < 0 or temperature != temperature:
        raise UsageProblem(f"--temperature: {temperature} is out of range; give 0 (greedy) or "
                           "a temperature above 0")
    if temperature == 0:
        if given:
            raise UsageProblem(f"{', '.join(given)}: only a sampled generation uses "
                               f"{'them' if len(given) > 1 else 'it'}; give --temperature "
                               "above 0 as well")
        return None
    return SamplingSettings(temperature=temperature, top_k=0 if top_k is None else top_k,
                            top_p=1.0 if top_p is None else top_p,
                            min_p=0.0 if min_p is None else min_p,
                            seed=0 if seed is None else seed)

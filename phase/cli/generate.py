"""`phase generate`: one greedy generation with one strategy, and its numbers."""

from __future__ import annotations

import json
from typing import TextIO

import click

from phase.base.errors import UsageProblem
from phase.campaign import DEFAULT_PLAN
from phase.cli.common import say
from phase.decode.generate import GenerateRequest, generate, summary_lines


@click.command("generate", epilog="Exit status: 0 generated; 1 a model or decoding failure; "
               "2 bad input (unknown strategy or model, an unreadable prompt file, a prompt "
               "that does not fit the context: checked before the model loads).")
@click.option("--model", "model", default=DEFAULT_PLAN.target, show_default=True,
              help="Target model: an embedded name, a .gguf path, or hf:REPO/FILE.")
@click.option("--draft", default=None, help="Draft model for draft-K, and for auto to draft "
              "with (name or path).")
@click.option("--strategy", default="plain", show_default=True,
              help="plain, draft-K (e.g. draft-4), ngram (copies from the context, its "
              "length adapting up to 16 tokens), ngram-K (at most K every step) or auto (which "
              "first profiles the models' pass costs).")
@click.option("--tokens", "n_tokens", type=click.IntRange(min=1), default=128, show_default=True,
              help="Exactly this many tokens are generated (end-of-sequence is ignored).")
@click.option("--prompt", default=None, help="The user message.")
@click.option("--prompt-file", type=click.File("r", encoding="utf-8"), default=None,
              help="Read the user message from a file ('-' for stdin).")
@click.option("--raw", is_flag=True, help="Send the prompt as given, without the chat template.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads [default: physical cores].")
@click.option("--ctx", "n_ctx", type=click.IntRange(min=16), default=DEFAULT_PLAN.n_ctx,
              show_default=True, help="Context size (prompt + generated tokens must fit).")
@click.option("--compare-plain", is_flag=True,
              help="Also decode plainly and report whether the output is the same.")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
def generate_command(model: str, draft: str | None, strategy: str, n_tokens: int,
                     prompt: str | None, prompt_file: TextIO | None, raw: bool,
                     threads: int | None, n_ctx: int, compare_plain: bool,
                     as_json: bool) -> None:
    """Generate greedily with one decoding strategy and print the text and its numbers."""
    from phase.decode.cores import check_thread_counts

    check_thread_counts([threads], "--threads")
    if prompt is not None and prompt_file is None:
        text = prompt
    elif prompt is None and prompt_file is not None:
        try:
            text = prompt_file.read()
        except UnicodeDecodeError as exc:
            raise UsageProblem(f"{prompt_file.name}: not UTF-8 text (byte 0x"
                               f"{exc.object[exc.start]:02x} at offset {exc.start})") from None
    else:
        raise click.UsageError("give exactly one of --prompt or --prompt-file")
    record = generate(
        GenerateRequest(model=model, draft=draft, strategy=strategy, n_tokens=n_tokens,
                        prompt=text, raw=raw, threads=threads, n_ctx=n_ctx,
                        compare_plain=compare_plain),
        progress=say,
    )
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    click.echo(record["text"])
    for line in summary_lines(record):
        say(line)

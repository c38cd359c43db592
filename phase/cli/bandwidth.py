"""`phase bandwidth`: this machine's memory bandwidth, STREAM-style copy and triad kernels at
the given thread counts (phase.bandwidth), printed, and as JSON with --json."""

from __future__ import annotations

import json

import click

from phase.cli.common import say


def _counts(text: str) -> list[int]:
    try:
        counts = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise click.BadParameter(f"{text!r}: give thread counts >= 1, comma-separated",
                                 param_hint="--threads")
    return counts


@click.command("bandwidth", epilog="Exit status: 0 measured; 2 bad input (an unknown kernel, "
               "thread counts below 1 or above this machine's CPUs without --oversubscribe, "
               "arrays larger than the memory available).")
@click.option("--threads", "threads_text", default=None,
              help="Comma list of thread counts [default: 1 and the physical cores].")
@click.option("--kernel", "kernels", type=click.Choice(["copy", "triad"]), multiple=True,
              help="Kernel to run (repeatable) [default: both].")
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True,
              help="Timed passes per kernel and thread count.")
@click.option("--array-mib", type=click.IntRange(min=1), default=None,
              help="MiB per array [default: 4x the last-level cache, STREAM's rule].")
@click.option("--implementation", type=click.Choice(["auto", "c", "numpy"]), default="auto",
              show_default=True, help="The kernels' code: c "
              "(phase/bandwidth/stream_kernel.c, compiled on first use), numpy, or auto "
              "(C where a compiler exists, else numpy).")
@click.option("--oversubscribe", is_flag=True,
              help="Allow thread counts above the CPUs this process may use (they time-slice "
              "one another: a measure of the scheduler, not the memory); warned about.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
def bandwidth_command(threads_text: str | None, kernels: tuple[str, ...], repeats: int,
                      array_mib: int | None, implementation: str, oversubscribe: bool,
                      as_json: bool) -> None:
    """Measure memory bandwidth as STREAM does: best and median GB/s of copy (2 words per
    element) and triad (3 words), write-allocate not counted."""
    from phase.bandwidth.stream import measure
    from phase.decode.cores import check_thread_counts, physical_cores, usable_cpus

    counts = _counts(threads_text) if threads_text else sorted({1, physical_cores()})
    over = check_thread_counts(counts, "--threads", allow_flag="--oversubscribe",
                               allowed=oversubscribe)
    if over:
        say(f"warning: {', '.join(map(str, over))} thread(s) on {usable_cpus()} CPU(s): "
            "threads time-slice one another, so these rows measure the scheduler too")
    records = []
    for kernel in kernels or ("copy", "triad"):
        for threads in counts:
            say(f"{kernel}, {threads} thread(s)…")
            records.append(measure(kernel, threads, repeats,
                                   array_mib << 20 if array_mib else None,
                                   implementation=implementation))
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in records], indent=1))
        return
    for r in records:
        rule = "" if r.meets_llc_rule else "  (arrays under 4x the last-level cache)"
        click.echo(f"{r.kernel:<6} {r.implementation:<5} {r.threads:>3} thr  "
                   f"best {r.best_gb_s:7.2f} GB/s  "
                   f"median {r.median_gb_s:7.2f} GB/s  {r.array_bytes >> 20} MiB x "
                   f"{r.repeats}{rule}")
    click.echo("method: STREAM-style kernels (phase.bandwidth; c: "
               "phase/bandwidth/stream_kernel.c, numpy the fallback); bytes as STREAM "
               "counts them (copy 2 words/element, triad 3; write-allocate not counted); "
               "--json gives each record's method in full")

"""`phase generate --concurrency N --workload FILE` for people: a table with a row per
request and the run's aggregate figures, from the record phase.campaign.generate_many returns.

Prompt ids come from the user's file; they are checked there to be plain names (letters,
digits, '.', '_', '-'), and are printed with any other character escaped all the same, so a
record from elsewhere cannot move the terminal's cursor."""

from __future__ import annotations

from typing import Any

HEADERS = ("req", "prompt", "prompt tok", "out tok", "TTFT ms", "TPOT ms", "E2E s",
           "accepted/proposed", "plain")


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _plain_cell(r: dict[str, Any]) -> str:
    if "matches_plain" not in r:
        return "-"
    if r["matches_plain"]:
        return "same"
    note = ", near-tie" if r.get("near_tie") else ""
    return f"differs at {r['first_divergence']}{note}"


def _safe(text: str) -> str:
    """Printable text: anything else as its escape (`ascii` without the quotes)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def request_rows(record: dict[str, Any]) -> list[tuple[str, ...]]:
    return [(str(r["id"]), _safe(r["prompt_id"]), str(r["prompt_tokens"]),
             str(r["output_tokens"]), _ms(r["ttft_s"]), _ms(r["tpot_s"]), f"{r['e2e_s']:.3f}",
             f"{r['accepted']}/{r['proposed']}", _plain_cell(r))
            for r in record["requests"]]


def table_lines(record: dict[str, Any]) -> list[str]:
    """One line per request under a header, columns aligned (numbers to the right)."""
    rows = [HEADERS, *request_rows(record)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    left = {1, len(HEADERS) - 1}  # the prompt id and the verdict are words

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(w) if i in left else cell.rjust(w)
                         for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    return [line(row) for row in rows]


def _percentile_line(name: str, p: dict[str, Any], scale: float, unit: str) -> str:
    if p["n"] == 0:
        return f"{name}: none (no request had one)"
    digits = 1 if scale > 1 else 3
    return (f"{name} {unit}: p50 {p['p50'] * scale:.{digits}f}, p90 {p['p90'] * scale:.{digits}f}"
            f", p99 {p['p99'] * scale:.{digits}f}, mean {p['mean'] * scale:.{digits}f} "
            f"(n = {p['n']})")


def aggregate_lines(record: dict[str, Any]) -> list[str]:
    """The run's figures: throughput, batch, latency percentiles, acceptance, energy."""
    agg, load = record["aggregate"], record["load"]
    whole = agg["whole_run"]
    lines = [
        f"{record['strategy']}, {load['n_requests']} requests, concurrency "
        f"{load['concurrency']}: {whole['output_tokens']} output tokens in "
        f"{whole['duration_s']:.3f} s = {whole['output_tokens_per_s']:.1f} tok/s, "
        f"{whole['requests_per_s']:.2f} requests/s",
        f"mean batch {agg['mean_batch']:.2f} requests ({agg['mean_batch_tokens']:.2f} tokens "
        f"per decode) over {agg['steps']} steps",
    ]
    steady = agg["steady_state"]
    if steady is None:
        lines.append(f"steady state (B = {agg['steady_state_b']}): none; "
                     f"{agg['steady_state_reason']}")
    else:
        lines.append(f"steady state (B = {agg['steady_state_b']}): {steady['output_tokens']} "
                     f"tokens in {steady['duration_s']:.3f} s = "
                     f"{steady['output_tokens_per_s']:.1f} tok/s")
    for name, key, scale, unit in (("TTFT", "ttft_s", 1000, "ms"), ("TPOT", "tpot_s", 1000, "ms"),
                                   ("ITL", "itl_s", 1000, "ms"), ("E2E", "e2e_s", 1, "s")):
        lines.append(_percentile_line(name, agg[key], scale, unit))
    acc = agg["acceptance"]
    if acc["rate"] is None:
        lines.append("acceptance n/a (nothing was proposed)")
    else:
        lines.append(f"accepted {acc['accepted']} of {acc['proposed']} proposed tokens: "
                     f"acceptance {acc['rate']:.1%}, mean accepted length "
                     f"{acc['mean_accepted_length']:.2f}")
    sampling = record["sampling"]
    if sampling is not None:
        lines.append("sampled: temperature {temperature:g}, top-k {top_k}, top-p {top_p:g}, "
                     "min-p {min_p:g}, seed {seed} (each request seeded with it and its "
                     "id)".format(**sampling))
    if record["compared_to_plain"]:
        same = sum(1 for r in record["requests"] if r["matches_plain"])
        lines.append(f"{same} of {len(record['requests'])} requests match single-request plain "
                     "decoding")
    lines.append(f"energy: not measured ({whole['energy']['reason']})")
    return lines

"""A real campaign's file, as `phase measure` writes it, passes every rule and carries the
evidence its divergences need: the real test model, the real RAPL backend on a sysfs tree."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from short_prompts import measure_command

from phase.results import load_raw, token_sha256
from phase.validate import validate_file

# serial: the counter-edges rule judges how far the fixture counter moved around each window's
# edges, which a core shared with another test's model can stretch past its 5% limit.
pytestmark = [pytest.mark.model, pytest.mark.serial]

# Long enough that every decode window spans many updates of the fixture counter (one per
# ~5 ms): the counter-edges rule rejects a window whose energy its edges leave uncertain by
# over 5%, and at 12 tokens a fast host's 0.16 s windows sat right at that limit.
TOKENS = 40


def advancing_rapl(root: Path, stop: threading.Event) -> threading.Thread:
    """A RAPL package zone whose counter a thread advances (10 W), written in place."""
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    counter = zone / "energy_uj"
    counter.write_text("1000000\n")

    def advance() -> None:
        value = 1_000_000
        while not stop.wait(0.005):
            value += 50_000
            with counter.open("r+") as fh:
                fh.write(f"{value:>15d}\n")

    thread = threading.Thread(target=advance, daemon=True)
    thread.start()
    return thread


def test_a_measured_campaign_validates_with_its_evidence(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    stop = threading.Event()
    writer = advancing_rapl(tmp_path / "powercap", stop)
    try:
        # --no-profile: with no auto to price, the profile is evidence of its own, and on a
        # busy machine its disturbed blocks' retries were two thirds of this test; the
        # profile rule judges a metered real profile in test_profile_campaign.py.
        result = CliRunner().invoke(measure_command(), [  # the short test prompts
            "--quick", "--no-profile", "--prompts", "code",
            "--strategies", "plain,draft-2,ngram", "--tokens", str(TOKENS), "--repeats", "2",
            "--cooldown", "0", "--idle-window", "0.2", "--threads", "1",
            "--rapl-root", str(tmp_path / "powercap"), "--hwmon-root", str(tmp_path / "no-hwmon"),
            "-o", str(out),
        ])
    finally:
        stop.set()
        writer.join()
    assert result.exit_code == 0, result.output

    results = load_raw(out)
    [ref] = results.references
    assert ref.top2_gaps is not None and len(ref.top2_gaps) == TOKENS
    assert ref.output_sha256 == token_sha256(ref.token_ids)
    # Schema 8: the prompt as tokenized (the n-gram matcher's context, which the decisions
    # rule replays) and the counter's declared wrap range (by which a wrap is corrected).
    assert ref.prompt_token_ids is not None
    assert {len(ref.prompt_token_ids)} == {r.prompt_tokens for r in results.runs}
    [sensor] = results.sensors
    assert sensor.wrap_j == pytest.approx(262143.328850)
    report = validate_file(out)
    bad = [(f.rule, f.message) for f in report.findings if f.severity != "warning"]
    assert bad == []
    assert report.chip_sensor is not None
    # Any divergence carries both gaps, so it is classed rather than left unclassified.
    for run in results.runs:
        if run.matches_plain is False:
            assert run.divergence_gap_verify is not None
            assert run.divergence_gap_reference is not None
    assert all(f.category != "unclassified" for f in report.findings)

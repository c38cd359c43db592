"""The CPU-time sources behind disturbance accounting: /proc on Linux, the Mach host's ticks on
macOS. The Mach call itself needs a Mac; everything around it (tick states, their wrap, our
own time from getrusage, other processes from ps) runs here on this machine's real counters,
shaped as host_statistics(HOST_CPU_LOAD_INFO) returns them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phase.campaign.cpu_counters import (
    NO_SOURCE,
    MachSource,
    TickAccumulator,
    busy_mach_ticks,
    own_cpu_seconds,
    parse_pid_cpu_ticks,
    parse_ps,
    parse_ps_time,
)
from phase.campaign.disturbance import LoadProbe, quiet_check

# `ps -A -o pid=,time=,comm=` as macOS prints it: minutes may pass 59, hundredths of seconds,
# full paths for some commands.
MAC_PS = """\
    1   12:34.56 /sbin/launchd
  412    0:00.03 /usr/libexec/logd
98765  123:04.50 /Applications/Xcode.app/Contents/MacOS/Xcode
"""


def test_ps_times_in_both_formats() -> None:
    assert parse_ps_time("00:01:02") == 62  # procps
    assert parse_ps_time("1-02:03:04") == 86400 + 2 * 3600 + 3 * 60 + 4
    assert parse_ps_time("12:34.56") == pytest.approx(12 * 60 + 34.56)  # macOS
    assert parse_ps_time("123:04.50") == pytest.approx(123 * 60 + 4.5)
    with pytest.raises(ValueError):
        parse_ps_time("1:2:3:4")


def test_mac_ps_listing_is_read_by_pid_without_ourselves() -> None:
    found = parse_ps(MAC_PS, exclude="412")
    assert set(found) == {"1", "98765"}
    assert found["98765"] == (pytest.approx(123 * 60 + 4.5), "Xcode")


def test_real_ps_lists_this_machines_processes() -> None:
    listing = subprocess.run(["ps", "-A", "-o", "pid=,time=,comm="], capture_output=True,
                             text=True, check=True).stdout
    found = parse_ps(listing, exclude="")
    assert str(os.getpid()) in found
    assert len(found) >= 2


def test_getrusage_agrees_with_proc_self_stat() -> None:
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    hz = os.sysconf("SC_CLK_TCK")
    proc = parse_pid_cpu_ticks(Path("/proc/self/stat").read_text()) / hz
    # /proc counts whole ticks; getrusage is finer.
    assert own_cpu_seconds() == pytest.approx(proc, abs=3 / hz)


def test_tick_counters_survive_their_32_bit_wrap() -> None:
    acc = TickAccumulator()
    acc.add((1 << 32) - 100)
    assert acc.add(50) == 150
    assert acc.add(60) == 160


def test_mach_states_busy_is_user_system_nice() -> None:
    assert busy_mach_ticks([10, 20, 1000, 5]) == 35
    with pytest.raises(ValueError):
        busy_mach_ticks([1, 2, 3])


def _linux_as_mach_states() -> list[int]:
    """This machine's aggregate /proc/stat line as host_cpu_load_info's four states, with
    irq/softirq/steal folded into system and iowait into idle, as macOS has no such states."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return [user, system + irq + softirq + steal, idle + iowait, nice]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to stand in")
def test_a_mac_source_measures_a_real_hog_and_names_it() -> None:
    source = MachSource(reader=_linux_as_mach_states)
    probe = LoadProbe(source=source)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        # Every process that ran, not only the top three: on a loaded machine (the suite's
        # other worker) the hog need not be among the busiest.
        # 2.5 s: `ps` gives each process's CPU time in whole seconds, so the hog's count is
        # sure to grow only once it has had a whole second of CPU: over 1 s, a hog sharing
        # its core (a loaded machine, `make test-fast`'s extra worker) often showed none.
        # At 2.5 s it needs 40% of a core.
        check = quiet_check(2.5, probe, top=1000)
    finally:
        hog.kill()
        hog.wait()
    cores = os.cpu_count() or 1
    # One busy process is one core's worth of the machine's capacity (others may add more).
    assert check.load is not None and check.load >= 0.6 / cores
    assert any(name.startswith(f"{hog.pid} ") for _, name in check.busiest)


def test_a_source_that_cannot_read_says_why() -> None:
    source = MachSource(reader=None) if sys.platform != "darwin" else None
    if source is None:
        pytest.skip("on macOS the default reader exists")
    assert source.reason == NO_SOURCE
    probe = LoadProbe(source=source)
    assert probe.read() is None
    assert probe.foreign_load(None, None) == (None, NO_SOURCE)


def test_a_failing_reader_stops_measuring_with_the_reason() -> None:
    calls = iter([[1, 1, 1, 1]])

    def reader() -> list[int]:
        try:
            return next(calls)
        except StopIteration:
            raise OSError("host_statistics(HOST_CPU_LOAD_INFO) returned 5") from None

    probe = LoadProbe(source=MachSource(reader=reader))
    assert probe.read() is None
    assert probe.reason is not None and "returned 5" in probe.reason

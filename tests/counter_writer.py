"""A fixture energy counter advanced on a fixed update grid by a process of its own.

counter-edges judges a window's recorded edge error against the least that a counter
updating exactly every period allows (phase.validate.rules.counter_edges.least_edge_error).
A writer thread inside the test process misses that grid when the process is busy: it waits
for the GIL behind the campaign's and the sampler's Python threads, and an update that lands
tens of milliseconds late can put an edge right on an update where the rule, counting whole
periods from the window's start, expects it a fraction of a period away: the window is read
more exactly than a regular counter allows, and the rule calls that impossible (a 0.057 J
error on a 3.4 s window failed the suite once). A process of its own waits only for a core:
on the 2-core test host at load 7, with two Python-busy threads beside the writer, a thread
writer landed a median 16 ms and a 95th percentile 65 ms late, this process 2 ms and 9 ms.

Run as `python counter_writer.py FILE POWER_W PERIOD_S T0` (T0 on time.monotonic(), which is
the same clock in every process): every PERIOD_S after T0 it writes, in place as the kernel
does, the microjoules POWER_W has spent since T0 (plus one joule).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

START_UJ = 1_000_000


def value_uj(power_w: float, t0: float, now: float) -> int:
    return START_UJ + round(power_w * (now - t0) * 1e6)


def advance(counter: Path, power_w: float, period_s: float, t0: float) -> None:
    parent = os.getppid()
    with counter.open("r+") as fh:
        while os.getppid() == parent:  # a test process that died does not leave it running
            time.sleep(period_s - (time.monotonic() - t0) % period_s)
            fh.seek(0)
            fh.write(f"{value_uj(power_w, t0, time.monotonic()):>15d}\n")
            fh.flush()


def start(counter: Path, power_w: float, period_s: float) -> subprocess.Popen[bytes]:
    """The writer, running: `counter` holds its first value, and its first update after that
    has landed (the campaign's sensor discovery measures the update period from the start)."""
    t0 = time.monotonic()
    counter.write_text(f"{START_UJ:>15d}\n")
    proc = subprocess.Popen([sys.executable, __file__, str(counter), str(power_w),
                             str(period_s), repr(t0)], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while int(counter.read_text()) == START_UJ:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the counter writer never updated {counter}")
        time.sleep(0.01)
    return proc


if __name__ == "__main__":
    path, power, period, start_t = sys.argv[1:]
    advance(Path(path), float(power), float(period), float(start_t))

"""Chart PNGs drawn by vl-convert in a child process.

vl-convert aborts the whole process on some input (a Rust panic that cannot unwind, e.g. a
character SVG cannot hold): drawn in this process, that abort would end a build without its
cleanup, leaving `.phase-tmp-*` staging directories behind. In a child, it is one error the
build reports, and the build cleans up as after any other failure.

One child serves a whole build (starting vl-convert's engine costs about a second): the
parent writes a length-prefixed Vega-Lite spec to its stdin and reads back a length-prefixed
PNG, or an error message. A child that died is started again for the next chart.
"""

from __future__ import annotations

import atexit
import struct
import subprocess
import sys
import threading
from typing import IO

from phase.base.errors import PhaseError

_CHILD = r"""
import json, struct, sys
import vl_convert as vlc
src, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = src.read(4)
    if len(head) < 4:
        break
    spec = json.loads(src.read(struct.unpack(">I", head)[0]))
    try:
        data = vlc.vegalite_to_png(spec["spec"], vl_version=spec["vl"], scale=spec["scale"])
        ok = b"P"
    except Exception as exc:
        data, ok = str(exc)[:500].encode("utf-8", "replace"), b"E"
    out.write(ok + struct.pack(">I", len(data)) + data)
    out.flush()
"""


class _Child:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def draw(self, request: bytes) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(struct.pack(">I", len(request)) + request)
        self.proc.stdin.flush()
        kind = _read(self.proc.stdout, 1)
        data = _read(self.proc.stdout, struct.unpack(">I", _read(self.proc.stdout, 4))[0])
        if kind == b"E":
            raise PhaseError("a chart's PNG could not be drawn: vl-convert said: "
                             + data.decode("utf-8", "replace").replace("\n", " "))
        return data

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _read(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return data


_lock = threading.Lock()
_child: list[_Child] = []


@atexit.register
def _close() -> None:
    while _child:
        _child.pop().close()


def draw_png(spec_json: str, vl_version: str | None, scale: float) -> bytes:
    """The PNG of a Vega-Lite spec (JSON text); PhaseError if vl-convert fails or crashes."""
    request = ('{"spec": ' + spec_json + ', "vl": ' + (f'"{vl_version}"' if vl_version
                                                         else "null")
               + f', "scale": {scale}}}').encode("utf-8")
    with _lock:  # one request at a time on the one pipe
        if not _child:
            _child.append(_Child())
        try:
            return _child[0].draw(request)
        except (EOFError, BrokenPipeError, struct.error):
            _child.pop().close()
            raise PhaseError("a chart's PNG could not be drawn: vl-convert crashed on its "
                             "spec (the build stops here and cleans up)") from None

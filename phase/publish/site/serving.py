"""Serving a built site over HTTP: in a background thread (tests) or until Ctrl-C."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from phase.base.errors import PhaseError


def _check(site_dir: Path) -> None:
    if not (site_dir / "index.html").is_file():
        raise PhaseError(f"{site_dir}/index.html does not exist; run `phase site` first")


@contextmanager
def serving(site_dir: Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve site_dir over HTTP in a background thread; yields the base URL."""
    _check(site_dir)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def serve(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until interrupted (what `phase serve` runs)."""
    _check(site_dir)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site_dir))
    with http.server.ThreadingHTTPServer((host, port), handler) as server:
        server.serve_forever()

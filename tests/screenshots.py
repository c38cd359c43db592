"""Full-page screenshots of the built site at 1280 px: the home page and each note's latest page.

    make screenshots      # builds the site from this repository, then writes docs/screenshots/

Run by the make target, never by hand: the PNGs are committed so that a reviewer sees the
pages without building them, and regenerating them after a change is one command. Uses the
same headless Debian chromium as the browser tests; the site is served over 127.0.0.1 and
every request that would leave it is refused (and makes the run fail).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from phase.publish.site.build import serving  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
WIDTH_PX = 1280
WAIT_FOR_CHARTS = ("() => Array.from(document.querySelectorAll('.phase-chart'))"
                   ".every(el => el.hasAttribute('data-drawn'))")


def pages(site: Path) -> list[tuple[str, str]]:
    """(screenshot name, page path): the home page, then each note's latest page by slug."""
    notes = sorted(p.parent.name for p in (site / "notes").glob("*/index.html"))
    return [("home", "index.html")] + [(slug, f"notes/{slug}/index.html") for slug in notes]


def shoot(browser, site: Path, out: Path,  # type: ignore[no-untyped-def]
          only: Collection[str] | None = None) -> list[Path]:
    """Screenshots with a launched Playwright browser (the browser tests pass theirs): every
    page of pages(), or those of them named in `only`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    outside: list[str] = []
    with serving(site) as base:
        context = browser.new_context(viewport={"width": WIDTH_PX, "height": 900},
                                      color_scheme="light")

        def route(r) -> None:  # type: ignore[no-untyped-def]
            if r.request.url.startswith(base):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        try:
            context.route("**/*", route)
            page = context.new_page()
            for name, rel in pages(site):
                if only is not None and name not in only:
                    continue
                page.goto(base + rel, wait_until="load")
                page.wait_for_function(WAIT_FOR_CHARTS, timeout=30_000)
                target = out / f"{name}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
        finally:
            context.close()
    if outside:
        raise SystemExit(f"requests left the site: {outside}")
    return written


def take(site: Path, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        try:
            return shoot(browser, site, out)
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-dir", type=Path, default=REPO / "site")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args()
    for path in take(args.site_dir, args.out):
        print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


if __name__ == "__main__":
    main()

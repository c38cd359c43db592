"""What a chart is, without Altair: its spec as a page embeds it, its PNG fallback, the
site's Vega bundle, and the kinds of chart a note draws.

Altair and vl-convert cost a process most of a second to import; a build whose pages draw no
chart (and `phase build` refusing its inputs) should not pay it, so the builders that need
Altair (energy.py, strategy.py, cost_model.py) are imported where a chart is drawn, and what
every page needs lives here.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from phase.base.escaping import vega_safe
from phase.publish.charts import png_worker
from phase.publish.charts.png_worker import draw_png
from phase.publish.numbers.pagenotes import LONG_REASON

ENERGY_KINDS = ("energy_vs_speed", "ratio_vs_acceptance", "per_k")  # charts/energy.py
STRATEGY_KINDS = ("cost_per_token", "speed_vs_acceptance", "time_per_token", "step_cost")


@functools.cache
def vl_version() -> str | None:
    """The Vega-Lite version Altair writes specs for, if vl-convert ships it."""
    import altair as alt
    import vl_convert as vlc

    major_minor = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return major_minor if major_minor in vlc.get_vegalite_versions() else None


@dataclass(frozen=True)
class Chart:
    kind: str
    title: str
    spec: dict[str, Any] | None
    missing: str | None  # why the chart is not drawn
    caption: str

    @property
    def key(self) -> str:
        return hashlib.sha256(canonical_json(self.spec).encode()).hexdigest()[:16]


# Significant digits a chart's numbers keep: far finer than a pixel or a tooltip shows (a
# tooltip formats to at most 3), where 17 digits of every value made up a quarter of a spec;
# the same 6 digits as a table cell's data-value (phase.publish.markup.values).
CHART_DIGITS = 6


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{CHART_DIGITS}g}")
    if isinstance(value, dict):
        return {k: _rounded(_known(v) if k == "values" else v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _known(values: Any) -> Any:
    """A data table's records without their null fields: Vega reads a missing field as it reads
    null (no mark, no tooltip value), and a machine without an energy sensor left four null
    energy fields in every record, a twentieth of a note page."""
    if not isinstance(values, list):
        return values
    return [{k: v for k, v in r.items() if v is not None} if isinstance(r, dict) else r
            for r in values]


def canonical_json(spec: Any) -> str:
    """The spec as the page embeds it and vl-convert draws it: data strings made safe for
    SVG and never a script URL (phase.base.escaping.vega_safe; a no-op for clean data), numbers
    to CHART_DIGITS significant digits."""
    return json.dumps(_rounded(vega_safe(spec)), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)


def html_safe_json(spec: Any) -> str:
    """JSON that can sit inside <script type="application/json"> whatever the data says."""
    text = canonical_json(spec)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def packages() -> str:
    """The versions of what makes a chart's PNG and the Vega bundle from a spec: what their
    build-cache entries are keyed by, read without importing either."""
    return f"altair {version('altair')}, vl-convert {version('vl-convert-python')}"


# The PNG fallback's pixels per CSS pixel.
PNG_SCALE = 1.5
# The code that turns a spec into a PNG or writes the Vega bundle: this module and the child
# that calls vl-convert. With the spec and packages() it decides what vl-convert returns, and
# nothing else of phase's does (charts/energy.py and the others decide the spec itself).
DRAWING_MODULES = (Path(__file__), Path(png_worker.__file__))


@functools.cache
def drawing_code() -> str:
    """The sha256 of the drawing code: what the charts' build-cache entries are bound to in
    place of all of phase's code, so that an edit elsewhere in phase draws nothing again."""
    digest = hashlib.sha256()
    for module in DRAWING_MODULES:
        digest.update(module.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _png(spec_text: str) -> bytes:
    # vl-convert draws a PNG in a few tenths of a CPU second, the same for the same spec: a
    # build keeps them in the build cache, so that a page drawn again (by another build of the
    # same results, or the same build after an edit of phase's code) does not draw them again.
    from phase.publish.data.cache import DatasetCache, decode_bytes, encode_bytes

    digest = hashlib.sha256(spec_text.encode()).hexdigest()
    return DatasetCache().memo("chart-png", [digest, packages(), PNG_SCALE],
                               lambda: _draw(spec_text), sha256=digest, code=drawing_code(),
                               encode=encode_bytes, decode=decode_bytes)


def _draw(spec_text: str) -> bytes:
    # In a child process: vl-convert aborts the process it runs in on some input.
    return draw_png(spec_text, vl_version(), PNG_SCALE)


def render_png(spec: dict[str, Any]) -> bytes:
    """The static fallback, drawn at build time by vl-convert (no browser, no network)."""
    return _png(canonical_json(spec))


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed in one file for the site, so charts need no CDN.

    Wrapped in a function scope: the bundle declares top-level names that would otherwise
    clash with other scripts on the page; it publishes vegaEmbed/vega/vegaLite on window.
    """
    import vl_convert as vlc

    versions = (
        f"vega {vlc.get_vega_version()}, vega-lite {vl_version() or 'latest'}, "
        f"vega-embed {vlc.get_vega_embed_version()}"
    )
    # The stub requires `snippet`; the library's own signature defaults it to None (no snippet).
    body = vlc.javascript_bundle(None, vl_version=vl_version())  # type: ignore[arg-type]
    # The module sets __version__ at runtime; its stub does not declare it.
    header = f"/* {versions}: bundled by vl-convert {vlc.__version__} */"  # type: ignore[attr-defined]
    return f"{header}\n(function () {{\n{body}\n}})();\n"


def overlaid_levels(factors: list[dict[str, Any]], kind: str, title: str) -> Chart | None:
    """The sentence in place of a chart that plots one point per prompt and strategy where
    the conditions also differ by extra factors (temperature, threads, ...): their levels would
    sit on top of each other, an aggregate that hides its parts. None where none vary."""
    names = sorted({name for levels in factors for name in levels})
    if not names:
        return None
    return Chart(kind, title, None,
                 f"Not drawn: this chart has one point per prompt and strategy, and the "
                 f"conditions also differ by {', '.join(names)}, whose levels would overlay "
                 "there; each condition is a row of the results table.", "")


def energy_reason(reasons: list[str], default: str = "not measured") -> str:
    """Why chip energy is missing, as a chart's sentence says it: a long reason is said once
    on the page, under the results table, not again under every chart."""
    if any(len(r) >= LONG_REASON for r in reasons):
        return "why: under the results table"
    return "; ".join(reasons) or default

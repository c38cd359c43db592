"""Data-derived text escaped for the context it lands in: Markdown, HTML attribute, URL, Vega.

HTML escaping is not enough where Markdown parses the text: `[x](javascript:alert(1))` and
attr_list's `{: onmouseover=... }` pass through `<`/`&` escaping untouched and become a live
link or an event handler. So the page templates escape every value for Markdown by default
(`markdown_safe`: HTML-escaped, and every character that makes Markdown active turned into
a character reference; a reference means the same in an HTML attribute or element, so the
one escaping is right wherever a value lands in a page; `markdown_text` also escapes what
only formats, for text that must show exactly as given), except

* a URL (`href`, `src`, a Markdown link target): `safe_url` allows relative references and
  http(s)/mailto only, HTML-escaped, never a `javascript:` (or `data:`, `vbscript:`...) URL;
* a Vega-Lite spec: `vega_safe` replaces characters SVG cannot hold (vl-convert aborts on
  them) and neutralises script URLs, and the spec is embedded as JSON (`</` escaped);
* text an author wrote as Markdown (a note's body, findings, changes), marked as such.

`active_markup` finds what must never appear in a built page: an event-handler attribute or
a script URL. The build's own output filter and the tests use it.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from markupsafe import Markup, escape

# Inline Markdown syntax (line-start markers like # - + need none mid-line; a value at a line
# start is preceded by template text).
_MD_SPECIAL = {c: f"&#{ord(c)};" for c in "\\`*_{}[]()|~<>&\"'!"}


def markdown_text(text: Any) -> Markup:
    """Text placed where Markdown is parsed: HTML-escaped and with every character Markdown
    could treat as syntax turned into a character reference, so it shows exactly as given."""
    plain = text.unescape() if isinstance(text, Markup) else str(text)
    return Markup("".join(_MD_SPECIAL.get(c, c) for c in plain))


# What makes Markdown active rather than merely formatted: links and images ([ ]), raw HTML
# and autolinks (< >), attribute lists ({ }), entities (&), backslash escapes; and quotes,
# for attributes. Emphasis and code spans only format, and `_` in a file name or `*` in a
# cell would become noise in every attribute; `markdown_text` (the `md` filter) escapes them
# too where text must show exactly as given.
_MD_ACTIVE = str.maketrans({c: f"&#{ord(c)};" for c in "\\{}[]"})


def markdown_safe(text: Any) -> Markup:
    """Text that may land where Markdown is parsed or in an HTML attribute or element: no
    Markdown link, image, raw HTML, attribute list or entity can come out of it (HTML
    escaping, which handles < > & and quotes, then the rest of the active syntax)."""
    plain = text.unescape() if isinstance(text, Markup) else str(text)
    return Markup(str(escape(plain)).translate(_MD_ACTIVE))


def finalize(value: Any) -> Any:
    """Jinja's `finalize`: every `{{ value }}` a template prints is escaped for Markdown
    (`markdown_safe`) unless it is already markup (a rendered fragment, or a value a filter
    escaped for its own context: `md`, `url`, `pre`)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return markdown_safe(value)
    return value


def join(items: Any, separator: str = "") -> Markup:
    """Jinja's `join` for these templates: each item escaped as `finalize` would (Jinja's own
    join only HTML-escapes, and returns markup that `finalize` then trusts)."""
    return Markup(finalize(separator)).join(finalize(i) if isinstance(i, str) else
                                            Markup(escape(i)) for i in items)


# A scheme is letters, digits, + - . before the first ":"; browsers ignore tabs, newlines and
# leading control characters and spaces when they read one.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_IGNORED = re.compile(r"[\x00-\x20\x7f]+")
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


class UnsafeUrl(ValueError):
    pass


def url_scheme(url: str) -> str | None:
    """The scheme a browser would read from `url` (lowercase), None for a relative one."""
    match = _SCHEME.match(_IGNORED.sub("", url))
    return match[1].lower() if match else None


def safe_url(url: Any) -> Markup:
    """A URL for an attribute or a Markdown link target: relative, or http(s)/mailto;
    anything else (javascript:, data:, vbscript:, file:) raises UnsafeUrl."""
    text = str(url)
    scheme = url_scheme(text)
    if scheme is not None and scheme not in SAFE_SCHEMES:
        raise UnsafeUrl(f"refusing a {scheme}: URL in a page ({text[:80]!r})")
    # Spaces and parentheses would end a Markdown link target; quotes an attribute.
    return Markup(str(escape(text)).replace(" ", "%20").replace("(", "%28")
                  .replace(")", "%29"))


# XML 1.0's characters: SVG text (vl-convert's PNGs) can hold nothing else.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def vega_safe(spec: Any) -> Any:
    """A copy of a Vega-Lite spec whose every string SVG can hold and no string is a script
    URL (Vega turns an `href` channel into a link)."""
    if isinstance(spec, dict):
        return {vega_safe(k): vega_safe(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return [vega_safe(v) for v in spec]
    if isinstance(spec, str):
        clean = _NOT_XML.sub("\ufffd", spec)
        scheme = url_scheme(clean)
        return f"unsafe-{clean}" if scheme in _SCRIPT_SCHEMES else clean
    return spec


_SCRIPT_SCHEMES = frozenset({"javascript", "vbscript"})
_URL_ATTRS = frozenset({"href", "src", "action", "formaction", "xlink:href", "poster",
                        "background", "cite", "data", "srcset"})


class _Active(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            elif name in _URL_ATTRS and value and url_scheme(value) in _SCRIPT_SCHEMES:
                self.found.append(f"<{tag} {name}={value[:40]!r}>")

    handle_startendtag = handle_starttag


def active_markup(html: str) -> list[str]:
    """Every event-handler attribute and script URL in `html` (empty for a safe page)."""
    parser = _Active()
    parser.feed(html)
    parser.close()
    return parser.found

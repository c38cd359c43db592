"""The page kinds a site holds, each one module with one `PageKind` (pages/base.py).

`PAGE_KINDS` is every kind the build renders, in the order the site's navigation lists them
(and they render). A new kind of page is a new module here with a `PageKind` subclass, listed
below; the build (site/docs.py) and mkdocs' navigation (site/mkdocs_run.py) take it from here.
"""

from phase.publish.pages.base import PageKind
from phase.publish.pages.bench import BenchKind
from phase.publish.pages.crosshost import CrossHostKind
from phase.publish.pages.home import HomeKind
from phase.publish.pages.note import NoteKind
from phase.publish.pages.raw import RawKind

PAGE_KINDS: tuple[PageKind, ...] = (HomeKind(), NoteKind(), RawKind(), CrossHostKind(),
                                    BenchKind())

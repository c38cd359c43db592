"""Greedy fixed-length decoding over llama.cpp: plain, draft-k and n-gram speculation (and,
beside the timed loops, sampled decoding: phase.decode.sampled).

This package is the only place in phase that imports `llama_cpp`.

The names below are looked up on first use (PEP 562), not imported with the package, so
importing a light submodule does not load llama.cpp and jinja2 (about a tenth of a second of
CPU of every `phase validate` start). tests/test_cli_lazy.py checks that it stays so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phase.base.lazy import exports

if TYPE_CHECKING:
    from phase.decode.backend import system_info
    from phase.decode.engine import Engine
    from phase.decode.placement import Device, ModelPlacement, this_build
    from phase.decode.proposers import DraftProposer
    from phase.decode.vocab import IncompatibleVocab, VocabInfo, check_compatible
    from phase.decode.vocab_file import VocabFile, check_fit

# name -> the submodule that defines it
_WHERE = {
    "system_info": "backend",
    "Engine": "engine",
    "Device": "placement", "ModelPlacement": "placement", "this_build": "placement",
    "DraftProposer": "proposers",
    "IncompatibleVocab": "vocab", "VocabInfo": "vocab", "check_compatible": "vocab",
    "VocabFile": "vocab_file", "check_fit": "vocab_file",
}


__getattr__, __dir__ = exports(__name__, _WHERE)


# Every name of the table, and nothing else (tests/test_lazy_exports.py checks the three agree).
__all__ = sorted(_WHERE)

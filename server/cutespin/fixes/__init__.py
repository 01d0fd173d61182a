"""Quick fixes: libcst-located edits, each re-verified through the same pipeline."""
from __future__ import annotations


def attach_fixes(kr, text, settings, token=None):
    return None

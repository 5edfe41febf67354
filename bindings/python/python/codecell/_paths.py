"""Where the guests travel (inside the package) and where their compiled form is cached."""

from __future__ import annotations

import os
import sys
from pathlib import Path

GUESTS = ("cpython", "rustpython")
_ENV = {"cpython": "CODECELL_CPYTHON_WASM", "rustpython": "CODECELL_RUSTPYTHON_WASM"}


def guest_path(guest: str) -> Path:
    """The guest's component: ``$CODECELL_<GUEST>_WASM`` if set, else the one in the package."""
    if guest not in GUESTS:
        raise ValueError(f"unknown guest {guest!r} (available: {', '.join(GUESTS)})")
    override = os.environ.get(_ENV[guest])
    if override:
        return Path(override)
    return Path(__file__).resolve().parent / "guests" / f"{guest}.wasm"


def cache_dir() -> Path:
    """The compiled-artifact cache: ``$CODECELL_CACHE_DIR``, else the platform's user cache."""
    override = os.environ.get("CODECELL_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "codecell" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "codecell"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codecell"

"""Host-side failures are exception classes, not strings."""

from __future__ import annotations

from pathlib import Path

import pytest

import codecell


def test_the_exception_hierarchy() -> None:
    for cls in (codecell.GuestNotBuilt, codecell.EngineError, codecell.CatalogError, codecell.DynamicToolError):
        assert issubclass(cls, codecell.CodecellError)
    for cls in (codecell.ApprovalRequired, codecell.ToolNotFound, codecell.PolicyViolation, codecell.InvalidArguments):
        assert issubclass(cls, codecell.DynamicToolError)
    assert codecell.GuestNotBuilt.__module__ == "codecell"


def test_a_missing_guest_is_guest_not_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODECELL_RUSTPYTHON_WASM", str(tmp_path / "missing.wasm"))
    with pytest.raises(codecell.GuestNotBuilt, match="missing.wasm"):
        codecell.CodeMode(guest="rustpython")


def test_a_corrupt_guest_is_an_engine_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.wasm"
    bogus.write_bytes(b"\0asm not really")
    monkeypatch.setenv("CODECELL_CPYTHON_WASM", str(bogus))
    with pytest.raises(codecell.EngineError):
        codecell.CodeMode()


def test_duplicate_tool_names_are_a_catalog_error() -> None:
    one = codecell.Tool("same", "", {"type": "object"}, print, category="c")
    two = codecell.Tool("same", "", {"type": "object"}, print, category="c")
    with pytest.raises(codecell.CatalogError, match="same"):
        codecell.CodeMode(tools=[one, two])


def test_the_guests_travel_with_the_package() -> None:
    for guest in ("cpython", "rustpython"):
        path = codecell.guest_path(guest)
        assert path.is_file(), f"{path} missing: build the wheel with bindings/python/build_wheel.py"
        assert path.read_bytes()[:4] == b"\0asm"


def test_the_cache_directory_follows_codecell_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODECELL_CACHE_DIR", str(tmp_path))
    assert codecell.cache_dir() == tmp_path
    monkeypatch.delenv("CODECELL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    import sys

    if sys.platform.startswith("linux"):
        assert codecell.cache_dir() == tmp_path / "xdg" / "codecell"

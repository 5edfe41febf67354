"""Shared fixtures. The guests must be in the installed wheel (or named by
$CODECELL_<GUEST>_WASM): a missing guest fails the tests with GuestNotBuilt, never skips them.
Build with `python3 bindings/python/ci.py`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Every test process shares one compiled-artifact cache unless the caller chose one.
os.environ.setdefault("CODECELL_CACHE_DIR", str(Path(tempfile.gettempdir()) / "codecell-pytest-cache"))

import codecell  # noqa: E402

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent.parent.parent / "fixtures"


@codecell.tool(category="math")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@pytest.fixture(scope="session")
def math_mode() -> codecell.CodeMode:
    return codecell.CodeMode(tools=[add])


@pytest.fixture(params=["cpython", "rustpython"])
def guest(request: pytest.FixtureRequest) -> str:
    return request.param

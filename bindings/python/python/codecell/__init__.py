"""codecell: run model-written Python in a WebAssembly sandbox, from Python.

Give an agent *code mode* (one ``execute_code`` tool whose snippets explore your tools with
``ls``/``read`` and call them with ``call_tool``) and *dynamic tools* (tools the model writes,
validated and run in a fresh guest each time). No Docker, no cloud account: the guests
(CPython and RustPython compiled to WebAssembly) ship inside this package.

    import codecell

    @codecell.tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    mode = codecell.CodeMode(tools=[add])
    print(mode.execute_code("from tools.main import add\\nprint(add(2, 3))").stdout)  # 5
"""

from __future__ import annotations

import atexit as _atexit

from . import _native
from ._code_mode import DEFAULT_CATEGORY, CodeMode
from ._dynamic import DynamicTools
from ._native import (
    ApprovalRequired,
    CatalogError,
    CodecellError,
    DynamicToolError,
    EngineError,
    GuestNotBuilt,
    InterpreterShuttingDown,
    InvalidArguments,
    PolicyViolation,
    ToolNotFound,
)
from ._outcome import ErrorInfo, Limits, Outcome, ToolCall
from ._paths import cache_dir, guest_path
from ._session import Session
from ._tool import Tool, tool

__version__: str = _native.__version__

__all__ = [
    "DEFAULT_CATEGORY",
    "ApprovalRequired",
    "CatalogError",
    "CodeMode",
    "CodecellError",
    "DynamicToolError",
    "DynamicTools",
    "EngineError",
    "ErrorInfo",
    "GuestNotBuilt",
    "InterpreterShuttingDown",
    "InvalidArguments",
    "Limits",
    "Outcome",
    "PolicyViolation",
    "Session",
    "Tool",
    "ToolCall",
    "ToolNotFound",
    "cache_dir",
    "guest_path",
    "tool",
]

# Before the interpreter finalises, stop runtime threads from attaching to it: runs still in
# flight finish (or are dropped at exit) without touching Python again.
_atexit.register(_native.close_for_shutdown)

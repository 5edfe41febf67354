"""codecell's RustPython guest: the Python half of the `sandbox` world's exports.

The RustPython twin of ../../cpython/app.py. src/lib.rs imports this module once when the VM is
built and calls `run_snippet` / `run_tool` / `python_version` from the WIT exports. A failure is
returned as a (kind, message, traceback) tuple, never raised: an exception escaping here is
turned into a failure by the Rust side too, but with less detail.
"""

import builtins
import random
import sys

import _codecell_api
import _codecell_preload  # noqa: F401  (stdlib modules loaded once, at start-up)
import restricted
import _codecell_stdio
import _codecell_stub_importer
from _codecell_failure import to_failure

CODECELL = _codecell_api.install()
_codecell_stub_importer.install()
_codecell_stdio.install()


def _prepare(recursion_limit) -> None:
    # A pre-initialised image fixes the generator's state at build time: every run draws new numbers.
    random.seed()
    sys.setrecursionlimit(max(50, int(recursion_limit)))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _snippet_globals() -> dict:
    return {
        "__name__": "__main__",
        "__builtins__": builtins,
        "ls": CODECELL.ls,
        "read": CODECELL.read,
        "call_tool": CODECELL.call_tool,
        "ToolError": CODECELL.ToolError,
    }


def run_snippet(code, recursion_limit):
    """Runs a snippet; returns None, or the failure tuple of the exception that ended it."""
    failure = None
    try:
        _prepare(recursion_limit)
        exec(compile(code, "<snippet>", "exec"), _snippet_globals())
    except SystemExit as e:
        if e.code not in (None, 0):
            failure = to_failure(e)
    except BaseException as e:
        failure = to_failure(e)
    _flush()
    return failure


def run_tool(source, imports, args_json, recursion_limit):
    """Runs a dynamic tool; returns (True, canonical JSON) or (False, failure tuple)."""
    try:
        _prepare(recursion_limit)
        return (True, restricted.run_tool(source, imports, args_json))
    except BaseException as e:
        return (False, to_failure(e))


def python_version():
    # RustPython's sys.version starts "3.14.0.alpha (...)"; report the language version as CPython does.
    return ".".join(str(part) for part in sys.version_info[:3])

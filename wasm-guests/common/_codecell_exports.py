"""The body of the `sandbox` world's exports, shared by both guests.

Importing this module sets the guest up: the stdlib preload, the `codecell` module, the stub
importer and the chunked stdio. Each guest's entry (`_codecell_app` in both) imports it once,
before the snapshot, and hands `run_snippet` and `run_tool` to
its runtime as they are: wrapping them would put one more frame under the user's code, which
the recursion limit counts.

Everything that differs between the guests is in the module `_codecell_binding` each provides
(../cpython/_codecell_binding.py, ../rustpython/py/_codecell_binding.py), with these names:

- `ls(path)`, `read(path)`, `call_tool(category, name, args_json)`: the WIT host imports, giving
  `(True, value)` or `(False, the host's error message)`;
- `start_tool_call(category, name, args_json)`: `(True, handle)` or `(False, message)`;
  `wait_tool_calls(timeout_us or None)`: the completed calls as `(handle, ok, value)` tuples;
  `cancel_tool_call(handle)`: drops a started call (see `_codecell_async`);
- `write(fd, data)`: writes all of `data` (bytes) to fd 1 or 2; true if the stream took it;
- `snippet_result(failure)`, `tool_result(ok, value)`: what the export gives its runtime, from
  None or a failure, and from (True, canonical JSON) or (False, failure); a failure is the
  `(kind, message, traceback, line)` tuple of _codecell_failure;
- optionally `encode_args(kwargs)` and `decode_result(text)`: native JSON codecs for tool calls,
  raising what `json` would (TypeError, ValueError); the stdlib's json is used without them;
- optionally `native_call_tool(ToolError)`: a native replacement for `_codecell_api.call_tool`
  with the same checks and errors.

`_codecell_binding_interface.Binding` declares the same names; a binding that lacks one fails
the guest's build, not a run. What both guests' export glue agrees on is here: the run options
arrive as the tuple `(recursion_limit, max_message_chars, max_traceback_chars,
max_result_chars)`, and a tool result over `max_result_chars` is returned as `(False, chars)`,
an int where a failure would be, which the glue reads as `result-too-large`.

Each run happens in a fresh instance, so nothing a run does survives it — except the cells of a
session (`run_cell`), which share one instance and one globals dict. Every exception is caught
here: one escaping would trap the instance (CPython) or lose the user's traceback.
"""

import builtins
import os
import random
import sys

import _codecell_api
import _codecell_async
import _codecell_binding as _binding
import _codecell_binding_interface
import _codecell_preload  # noqa: F401  (stdlib modules must be imported before the snapshot)
import _codecell_stdio
import _codecell_stub_importer
import restricted
from _codecell_failure import Clip, to_failure

_codecell_binding_interface.check(_binding)

CODECELL = _codecell_api.install()
_codecell_async.install(CODECELL)
_codecell_stub_importer.install()
_codecell_stdio.install()


def _prepare(options, reseed=True) -> tuple:
    """Sets the run up; gives its failure clip and its result limit."""
    # The snapshot fixed the generator's state at build time: every run must draw new numbers.
    # Seed from os.urandom (WASI random, fresh per run) rather than `random.seed()`: RustPython
    # seeds from a Rust thread-local generator whose state is itself part of the snapshot.
    if reseed:
        random.seed(int.from_bytes(os.urandom(32), "big"))
    recursion, message, traceback, result = options
    sys.setrecursionlimit(max(50, int(recursion)))
    return Clip(message, traceback), int(result)


# Until a run's own options are read: what a failure in `_prepare` itself is clipped to.
_DEFAULT_CLIP = Clip(4096, 8192)


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
        "call_tool_async": CODECELL.call_tool_async,
        "ToolError": CODECELL.ToolError,
    }


def run_snippet(code, options):
    """Runs a snippet; its failure, if any, is the (kind, message, traceback, line) of the exception."""
    failure = None
    clip = _DEFAULT_CLIP
    try:
        clip, _ = _prepare(options)
        compiled = _codecell_async.compile_snippet(code, "<snippet>")
        if _codecell_async.needs_loop(compiled):
            _codecell_async.run_top_level(compiled, _snippet_globals())
        else:
            exec(compiled, _snippet_globals())
    except SystemExit as e:
        if e.code not in (None, 0):
            failure = to_failure(e, clip)
    except BaseException as e:
        failure = to_failure(e, clip)
    _flush()
    return _binding.snippet_result(failure)


# The globals of this instance's session; created by its first cell.
_session_globals = None


def run_cell(code, options):
    """Runs one cell of a session in the globals every earlier cell of this instance used.

    `random` is seeded by the first cell only, so its sequence continues across cells as it
    would in one interpreter.
    """
    global _session_globals
    failure = None
    clip = _DEFAULT_CLIP
    try:
        first = _session_globals is None
        clip, _ = _prepare(options, reseed=first)
        if first:
            _session_globals = _snippet_globals()
        compiled = _codecell_async.compile_snippet(code, "<cell>")
        if _codecell_async.needs_loop(compiled):
            _codecell_async.run_top_level(compiled, _session_globals)
        else:
            exec(compiled, _session_globals)
    except SystemExit as e:
        if e.code not in (None, 0):
            failure = to_failure(e, clip)
    except BaseException as e:
        failure = to_failure(e, clip)
    _flush()
    return _binding.snippet_result(failure)


def run_tool(source, imports, args_json, options):
    """Runs a dynamic tool's `execute(args)`; gives canonical JSON, the failure, or the size of
    a result over the run's limit."""
    clip = _DEFAULT_CLIP
    try:
        clip, max_result = _prepare(options)
        encoded = restricted.run_tool(source, imports, args_json)
    except BaseException as e:
        return _binding.tool_result(False, to_failure(e, clip))
    if len(encoded) > max_result:
        return (False, len(encoded))
    return _binding.tool_result(True, encoded)


# Runs made before the snapshot, with output going nowhere: an error snippet (tracebacks), a
# printing one, and a dynamic tool. Every run starts from the snapshot, so what an interpreter
# learns while running this module's code (specialised bytecode, attribute and method caches)
# would otherwise be relearned, and paid for, by every run.
_WARM_UP_SNIPPETS = ("print(1+1)", "raise ValueError('warm-up')",
                     "import asyncio\nawait asyncio.sleep(0)")
_WARM_UP_TOOL = "def execute(args):\n    return {'echo': args}\n"
# The warm-up runs' options: recursion limit, failure message and traceback clips, result size.
_WARM_UP_OPTIONS = (1000, 4096, 8192, 1 << 20)
_WARM_UP_ROUNDS = 8


def _warm_up() -> None:
    real_write = _binding.write
    _binding.write = lambda fd, data: True
    try:
        for _ in range(_WARM_UP_ROUNDS):
            for code in _WARM_UP_SNIPPETS:
                try:
                    run_snippet(code, _WARM_UP_OPTIONS)
                except BaseException:  # the CPython binding raises a failure as its WIT error
                    pass
            try:
                run_tool(_WARM_UP_TOOL, [], '{"x": [1, "a"]}', _WARM_UP_OPTIONS)
            except BaseException:
                pass
    finally:
        _binding.write = real_write


_warm_up()

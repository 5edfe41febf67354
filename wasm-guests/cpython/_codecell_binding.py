"""The CPython (componentize-py) guest's binding: what ../common/ needs from this guest.

The names are listed in ../common/_codecell_exports.py. Here the host imports raise
`componentize_py_types.Err`, output goes out with `os.write` (WASI fds 1 and 2), the streams keep
the interpreter's own binary buffers, and an export's failure is raised as `Err(Failure(...))`.
"""

import os
import re
import sys

from componentize_py_types import Err, Ok
from wit_world.imports import host
from wit_world.imports.types import (
    Failure,
    RunOptions,
    ToolFailure_Raised,
    ToolFailure_ResultTooLarge,
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _wit_str(s):
    """`s` as a WIT string can carry it: lone surrogates become U+FFFD.

    componentize-py lowers a str with lone surrogates by panicking (a trap the guest cannot
    catch); RustPython's binding replaces them the same way.
    """
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)


def ls(path):
    try:
        return (True, host.ls(_wit_str(path)))
    except Err as e:
        return (False, e.value)


def read(path):
    try:
        return (True, host.read(_wit_str(path)))
    except Err as e:
        return (False, e.value)


def call_tool(category, name, args_json):
    # The common case, all ASCII, skips three calls of _wit_str.
    if not (category.isascii() and name.isascii() and args_json.isascii()):
        category, name, args_json = _wit_str(category), _wit_str(name), _wit_str(args_json)
    try:
        return (True, host.call_tool(category, name, args_json))
    except Err as e:
        return (False, e.value)


def start_tool_call(category, name, args_json):
    try:
        return (True, host.start_tool_call(_wit_str(category), _wit_str(name), _wit_str(args_json)))
    except Err as e:
        return (False, e.value)


def wait_tool_calls(timeout_us):
    done = []
    for completion in host.wait_tool_calls(timeout_us):
        outcome = completion.outcome
        done.append((completion.handle, isinstance(outcome, Ok), outcome.value))
    return done


def cancel_tool_call(handle):
    host.cancel_tool_call(handle)


def write(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    return True


def byte_buffer(fd):
    # The interpreter's own binary stream on the same descriptor, flushed by ChunkedWriter.flush.
    return (sys.stdout if fd == 1 else sys.stderr).buffer


def set_std_streams(stdout, stderr):
    sys.stdout = stdout
    sys.stderr = stderr


def run_limits(options):
    return (
        options.recursion_limit,
        options.max_message_chars,
        options.max_traceback_chars,
        options.max_result_chars,
    )


WARM_UP_OPTIONS = RunOptions(
    recursion_limit=1000, max_message_chars=4096, max_traceback_chars=8192, max_result_chars=1 << 20
)


def _failure(failure) -> Failure:
    try:
        kind, message, traceback, line = failure
        return Failure(
            kind=_wit_str(kind),
            message=_wit_str(message),
            traceback=_wit_str(traceback),
            line=line,
        )
    except BaseException:
        # Last resort, e.g. MemoryError while building the record.
        return Failure(kind="MemoryError", message="", traceback="", line=None)


def snippet_result(failure):
    if failure is not None:
        raise Err(_failure(failure))


def tool_result(ok, value):
    if ok:
        return _wit_str(value)
    raise Err(ToolFailure_Raised(_failure(value)))


def tool_too_large(chars):
    raise Err(ToolFailure_ResultTooLarge(chars))

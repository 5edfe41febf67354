"""The CPython (componentize-py) guest's binding: what ../common/ needs from this guest.

The names are listed in ../common/_codecell_exports.py. Here the host imports raise
`componentize_py_types.Err`, output goes out with `os.write` (WASI fds 1 and 2), the streams keep
the interpreter's own binary buffers, and an export's failure is raised as `Err(Failure(...))`.
"""

import os
import sys

from componentize_py_types import Err
from wit_world.imports import host
from wit_world.imports.types import Failure


def ls(path):
    try:
        return (True, host.ls(path))
    except Err as e:
        return (False, e.value)


def read(path):
    try:
        return (True, host.read(path))
    except Err as e:
        return (False, e.value)


def call_tool(category, name, args_json):
    try:
        return (True, host.call_tool(category, name, args_json))
    except Err as e:
        return (False, e.value)


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


def recursion_limit(options):
    return options.recursion_limit


def _error(failure) -> Err:
    try:
        kind, message, traceback = failure
        return Err(Failure(kind=kind, message=message, traceback=traceback))
    except BaseException:
        # Last resort, e.g. MemoryError while building the record.
        return Err(Failure(kind="MemoryError", message="", traceback=""))


def snippet_result(failure):
    if failure is not None:
        raise _error(failure)


def tool_result(ok, value):
    if ok:
        return value
    raise _error(value)

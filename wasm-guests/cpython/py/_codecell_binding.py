"""The CPython guest's binding: what ../../common/ needs from this guest.

The names are listed in ../../common/_codecell_exports.py. The native module `_codecell_host`
(c/shim.c) gives the WIT imports as `(True, value)` / `(False, message)`; strings are made
WIT-safe (lone surrogates become U+FFFD) before they cross. Output goes out with `os.write`
(WASI fds 1 and 2); run options and results are plain tuples, read by c/shim.c.
"""

import asyncio.events
import os
import re

import _codecell_host

# ../../common/_codecell_async.py subclasses the policy by its 3.14 name; 3.13 calls it
# BaseDefaultEventLoopPolicy.
if not hasattr(asyncio.events, "_BaseDefaultEventLoopPolicy"):
    asyncio.events._BaseDefaultEventLoopPolicy = asyncio.events.BaseDefaultEventLoopPolicy

_SURROGATE = re.compile("[\ud800-\udfff]")


def _wit_str(s):
    """`s` with lone surrogates replaced by U+FFFD, so it encodes as UTF-8."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)


def ls(path):
    return _codecell_host.ls(_wit_str(path))


def read(path):
    return _codecell_host.read(_wit_str(path))


def call_tool(category, name, args_json):
    # The common case, all ASCII, skips three calls of _wit_str.
    if not (category.isascii() and name.isascii() and args_json.isascii()):
        category, name, args_json = _wit_str(category), _wit_str(name), _wit_str(args_json)
    return _codecell_host.call_tool(category, name, args_json)


def start_tool_call(category, name, args_json):
    return _codecell_host.start_tool_call(_wit_str(category), _wit_str(name), _wit_str(args_json))


wait_tool_calls = _codecell_host.wait_tool_calls
cancel_tool_call = _codecell_host.cancel_tool_call


def write(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    return True


def _failure(failure):
    """The failure tuple with WIT-safe strings (c/shim.c reads them as UTF-8)."""
    try:
        kind, message, traceback, line = failure
        return (_wit_str(kind), _wit_str(message), _wit_str(traceback), line)
    except BaseException:
        # Last resort, e.g. MemoryError while building the tuple.
        return ("MemoryError", "", "", None)


def snippet_result(failure):
    return None if failure is None else _failure(failure)


def tool_result(ok, value):
    if ok:
        return (True, _wit_str(value))
    return (False, _failure(value))

"""The RustPython guest's binding: what ../../common/ needs from this guest.

The names are listed in ../../common/_codecell_exports.py. The native module `_codecell_host`
(src/native.rs) gives most of them as they are: its `ls`, `read` and `call_tool_json` already return
`(True, value)` / `(False, message)`, and `write(fd, bytes)` goes straight to the WASI stream.
RustPython's own stdio objects are not used at all. src/lib.rs passes the run options as a tuple
of ints and reads a failure as the `(kind, message, traceback, line)` tuple itself.
"""

import signal
import time

import _codecell_host
from _codecell_host import decode_result, encode_args, ls, read, write  # noqa: F401  (the binding's interface)
from _codecell_host import cancel_tool_call, start_tool_call, wait_tool_calls  # noqa: F401
from _codecell_host import call_tool_json as call_tool  # noqa: F401


def native_call_tool(tool_error):
    """The guest-facing `call_tool`, natively: see `ToolCaller` in src/native.rs."""
    return _codecell_host.tool_caller(tool_error)


# WASI has no time zones. CPython's WASI build says so with UTC values; RustPython's `time` lacks
# the names altogether, which breaks datetime.strptime (_strptime reads time.tzname).
for _name, _value in (("tzname", ("UTC", "UTC")), ("timezone", 0), ("altzone", 0), ("daylight", 0)):
    if not hasattr(time, _name):
        setattr(time, _name, _value)


# asyncio.Runner reads signal.SIGINT (to leave a default handler alone); WASI has no signals and
# RustPython's `signal` lacks the name. getsignal() of it gives None, so asyncio installs nothing.
if not hasattr(signal, "SIGINT"):
    signal.SIGINT = 2


def snippet_result(failure):
    return failure


def tool_result(ok, value):
    return (ok, value)

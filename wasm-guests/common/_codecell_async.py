"""asyncio in the guest: an event loop with no sockets, and concurrent tool calls.

The stock loop needs a selector and a self-pipe (`socket.socketpair()`), which WASI lacks. Here
the loop's only sources of readiness are its timers and the tool calls it started on the host:
the selector's `select(timeout)` is the host's `wait-tool-calls`, which returns when a started
call completes or the next timer is due. `call_tool_async` starts a call at once
(`start-tool-call`) and awaits its completion, so `asyncio.gather` over several calls runs their
host handlers at the same time. A cancelled call (`wait_for` timeout, a cancelled task) is
dropped on the host (`cancel-tool-call`); calls still running when the run ends are dropped by
the host itself.

Top-level `await` in a snippet: `compile_snippet` compiles with `PyCF_ALLOW_TOP_LEVEL_AWAIT`;
code that awaits at top level gives a coroutine, which `run_top_level` runs on this loop, as
notebooks do. Both are for every export that runs user code (`run_snippet`, sessions' cells).
"""

import asyncio
import asyncio.events
import functools
import inspect
import types

import _codecell_api
import _codecell_binding as _binding

# Every module asyncio loads lazily must be in the snapshot (CPython imports nothing at run time).
import asyncio.base_events  # noqa: F401
import asyncio.runners  # noqa: F401
import asyncio.taskgroups  # noqa: F401
import asyncio.timeouts  # noqa: F401

_TOP_LEVEL_AWAIT = getattr(__import__("ast"), "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0x2000)
_CO_COROUTINE = inspect.CO_COROUTINE


class _HostCalls:
    """The loop's selector: the started calls, and the host's wait for their completions."""

    def __init__(self):
        self.pending = {}

    def select(self, timeout):
        if not self.pending:
            if timeout is None:
                raise RuntimeError(
                    "the event loop has nothing to wait for: no timer is due and no tool call is "
                    "in flight, so it would wait forever"
                )
            if timeout <= 0:
                return []
        # Whole microseconds, rounded up: rounding down would wake the loop before its timer.
        micros = None if timeout is None else 0 if timeout <= 0 else int(timeout * 1_000_000) + 1
        return _binding.wait_tool_calls(micros)

    def close(self):
        for handle in list(self.pending):
            self.pending.pop(handle, None)
            _binding.cancel_tool_call(handle)


class HostEventLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose only events are timers and completed host tool calls."""

    def __init__(self):
        super().__init__()
        self._selector = _HostCalls()

    def _process_events(self, event_list):
        pending = self._selector.pending
        for handle, ok, value in event_list:
            future = pending.pop(handle, None)
            if future is not None and not future.done():
                future.set_result((ok, value))

    def _write_to_self(self):
        # Single-threaded, and the host's wait ends on its own when a timer is due.
        pass

    def close(self):
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if not self.is_closed():
            self._selector.close()
        super().close()

    async def _start_call(self, category, name, args_json):
        ok, handle = _binding.start_tool_call(category, name, args_json)
        if not ok:
            raise _codecell_api.ToolError(handle) from None
        future = self.create_future()
        self._selector.pending[handle] = future
        try:
            ok, value = await future
        except BaseException:
            if self._selector.pending.pop(handle, None) is not None:
                _binding.cancel_tool_call(handle)
            raise
        if not ok:
            raise _codecell_api.ToolError(value) from None
        return _codecell_api.decode_result(value)


class _Policy(asyncio.events._BaseDefaultEventLoopPolicy):
    _loop_factory = HostEventLoop


def _install_policy():
    setter = getattr(asyncio.events, "_set_event_loop_policy", None) or asyncio.set_event_loop_policy
    setter(_Policy())


async def call_tool_async(category: str, name: str, /, **kwargs):
    """Awaitable call_tool: `await call_tool_async(category, name, **kwargs)`; calls awaited
    together (`asyncio.gather`, tasks) run on the host at the same time."""
    args_json = _codecell_api.encode_call(category, name, kwargs, "call_tool_async")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if not isinstance(loop, HostEventLoop):
        raise RuntimeError("call_tool_async() needs codecell's event loop (asyncio.run, or a top-level await)")
    return await loop._start_call(category, name, args_json)


def async_twin(function, name):
    """`<tool>_async` for a stub `function`: the same signature, awaiting `call_tool_async`.

    A stub's body ends in `return call_tool(...)`; the same code with `call_tool_async` in its
    globals returns the coroutine of the call, which the twin awaits.
    """
    scope = dict(function.__globals__)
    scope["call_tool"] = call_tool_async
    starter = types.FunctionType(function.__code__, scope, function.__name__,
                                 function.__defaults__, function.__closure__)
    starter.__kwdefaults__ = function.__kwdefaults__

    @functools.wraps(function)
    async def twin(*args, **kwargs):
        return await starter(*args, **kwargs)

    twin.__name__ = twin.__qualname__ = name
    twin.__doc__ = "Awaitable " + function.__name__ + "(...): runs concurrently under asyncio.gather.\n\n" + (function.__doc__ or "")
    return twin


def compile_snippet(source, filename):
    """Compiles user code that may `await` at top level."""
    return compile(source, filename, "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)


def needs_loop(code):
    """Whether compiled code awaits at top level (running it gives a coroutine)."""
    return bool(code.co_flags & _CO_COROUTINE)


def run_top_level(code, scope):
    """Runs code that awaits at top level in `scope` on a fresh loop, as asyncio.run would."""
    return asyncio.run(eval(code, scope))


def install(module):
    """Adds `call_tool_async` to the `codecell` module and makes asyncio use HostEventLoop."""
    module.call_tool_async = call_tool_async
    _install_policy()

"""Tools: `Tool` (a JSON Schema and a function) and the `@tool` decorator, and the dispatcher
the native side calls for every ``call_tool`` (sync functions and ``async def`` alike)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
import threading
from typing import Any, Callable, Dict, Mapping, Optional, TypeVar, Union, overload

from ._schema import function_schema

F = TypeVar("F", bound=Callable[..., Any])


class Tool:
    """A host tool: its name, description, JSON Schemas and the Python function doing the work.

    The function is called with the (schema-checked) arguments as keyword arguments, in a
    worker thread; an ``async def`` function runs on the caller's event loop when the run was
    started with ``execute_code_async``, else on a private loop. What it raises becomes a
    ``ToolError`` in the guest carrying the exception's message (never the host traceback);
    what it returns must be JSON-serialisable (pydantic models and dataclasses are converted).
    """

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        func: Callable[..., Any],
        *,
        category: Optional[str] = None,
        output_schema: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool needs a non-empty name, got {name!r}")
        if not callable(func):
            raise TypeError(f"tool {name!r}: func must be callable, got {func!r}")
        if not isinstance(input_schema, Mapping):
            raise TypeError(f"tool {name!r}: input_schema must be a dict (a JSON Schema)")
        self.name = name
        self.description = description or ""
        self.input_schema: Dict[str, Any] = copy.deepcopy(dict(input_schema))
        self.output_schema = None if output_schema is None else copy.deepcopy(dict(output_schema))
        self.func = func
        self.category = category
        self._converters: Dict[str, Callable[[Any], Any]] = {}
        self._dynamic: Any = None
        # Checked here so a bad schema fails where it is written, not at the first run.
        self._input_json = _schema_json(self.input_schema, name, "input_schema")
        self._output_json = (
            None if self.output_schema is None else _schema_json(self.output_schema, name, "output_schema")
        )

    @classmethod
    def from_openai(cls, definition: Mapping[str, Any], func: Callable[..., Any], *, category: Optional[str] = None) -> "Tool":
        """A tool from an OpenAI function definition (``{"type": "function", "function": {...}}`` or the inner dict)."""
        inner = definition.get("function", definition)
        return cls(
            inner["name"],
            inner.get("description", ""),
            inner.get("parameters") or {"type": "object", "properties": {}},
            func,
            category=category,
        )

    @classmethod
    def from_mcp(cls, definition: Any, func: Callable[..., Any], *, category: Optional[str] = None) -> "Tool":
        """A tool from an MCP tool definition (a dict or an object with ``name``, ``description``, ``inputSchema``)."""
        get = definition.get if isinstance(definition, Mapping) else lambda k, d=None: getattr(definition, k, d)
        return cls(
            get("name"),
            get("description") or "",
            get("inputSchema") or {"type": "object", "properties": {}},
            func,
            category=category,
            output_schema=get("outputSchema"),
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function directly (the decorated function stays usable)."""
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, category={self.category!r})"

    def to_dict(self) -> Dict[str, Any]:
        """The MCP definition: ``name``, ``description``, ``inputSchema`` (and ``outputSchema``)."""
        out: Dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": copy.deepcopy(self.input_schema)}
        if self.output_schema is not None:
            out["outputSchema"] = copy.deepcopy(self.output_schema)
        return out

    def _dispatch(self, args_json: str, reply: Any, loop: Any) -> None:
        """Called by the native side (in a worker thread, holding the GIL) for one call."""
        try:
            args = json.loads(args_json)
            for name, convert in self._converters.items():
                if name in args:
                    args[name] = convert(args[name])
            result = self.func(**args)
        except Exception as error:  # the guest sees the message, never the traceback
            reply.error(_message(error))
            return
        if inspect.isawaitable(result):
            _schedule(result, reply, loop)
        else:
            _answer(reply, result)


@overload
def tool(func: F) -> Tool: ...
@overload
def tool(*, name: Optional[str] = None, description: Optional[str] = None, category: Optional[str] = None) -> Callable[[F], Tool]: ...


def tool(
    func: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    category: Optional[str] = None,
) -> Union[Tool, Callable[[Callable[..., Any]], Tool]]:
    """Makes a plain function (sync or ``async def``) a `Tool`.

    Its name is the function's, its description the docstring's text before ``Args:``, and its
    ``inputSchema`` comes from the type hints, defaults and the docstring's ``Args:`` section.
    Use as ``@tool`` or ``@tool(name=..., description=..., category=...)``.
    """

    def make(f: Callable[..., Any]) -> Tool:
        doc_description, input_schema, converters = function_schema(f)
        made = Tool(
            name or f.__name__,
            description if description is not None else doc_description,
            input_schema,
            f,
            category=category,
        )
        made._converters = converters
        functools.update_wrapper(made, f)  # type: ignore[arg-type]
        return made

    return make(func) if func is not None else make


def _schema_json(schema: Dict[str, Any], name: str, what: str) -> str:
    try:
        return json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"tool {name!r}: {what} is not JSON: {error}") from None


def _message(error: BaseException) -> str:
    text = str(error)
    return text if text else type(error).__name__


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"a {type(value).__name__} is not JSON-serialisable")


def _answer(reply: Any, result: Any) -> None:
    try:
        text = json.dumps(result, default=_jsonable, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        reply.error(f"the tool's result is not JSON-serialisable: {error}")
        return
    reply.ok(text)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _schedule(awaitable: Any, reply: Any, loop: Any) -> None:
    """Runs an async tool's awaitable on the run's loop (or the private one) and answers later."""
    target = loop if loop is not None and not loop.is_closed() else _private_loop()
    try:
        future = asyncio.run_coroutine_threadsafe(_await(awaitable), target)
    except RuntimeError as error:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        reply.error(f"cannot run the async tool: {error}")
        return

    def done(f: "asyncio.Future[Any]") -> None:
        if f.cancelled():
            reply.error("the async tool was cancelled")
        elif f.exception() is not None:
            reply.error(_message(f.exception()))  # type: ignore[arg-type]
        else:
            _answer(reply, f.result())

    future.add_done_callback(done)


_private: Optional[asyncio.AbstractEventLoop] = None
_private_lock = threading.Lock()


def _private_loop() -> asyncio.AbstractEventLoop:
    """A daemon thread's event loop for async tools of sync runs, started on first use."""
    global _private
    with _private_lock:
        if _private is None or _private.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="codecell-async-tools", daemon=True).start()
            _private = loop
        return _private

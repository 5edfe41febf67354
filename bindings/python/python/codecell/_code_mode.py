"""`CodeMode`: the one ``execute_code`` tool a model gets, over an agent's Python tools."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._outcome import Limits, Outcome
from ._paths import cache_dir, guest_path
from ._session import Session
from ._tool import Tool

DEFAULT_CATEGORY = "main"
"""The category of a tool given in ``tools=[...]`` without a ``category`` of its own."""

CategorySpec = Union[Sequence[Tool], Mapping[str, Any]]


def _rows(tools: Sequence[Tool]) -> List[Tuple[Any, ...]]:
    rows = []
    for t in tools:
        if not isinstance(t, Tool):
            raise TypeError(f"expected a codecell.Tool (use @codecell.tool), got {t!r}")
        if t._dynamic is not None:
            rows.append((t.name, t.description, t._input_json, t._output_json, None, t._dynamic))
        else:
            rows.append((t.name, t.description, t._input_json, t._output_json, t._dispatch, None))
    return rows


def _categories(
    tools: Optional[Iterable[Tool]], categories: Optional[Mapping[str, CategorySpec]]
) -> List[Tuple[str, str, List[Tuple[Any, ...]]]]:
    grouped: Dict[str, Tuple[str, List[Tool]]] = {}
    for name, spec in (categories or {}).items():
        if isinstance(spec, Mapping):
            grouped[name] = (spec.get("description", ""), list(spec.get("tools", ())))
        else:
            grouped[name] = ("", list(spec))
    for t in tools or ():
        if not isinstance(t, Tool):
            raise TypeError(f"expected a codecell.Tool (use @codecell.tool), got {t!r}")
        category = t.category or DEFAULT_CATEGORY
        grouped.setdefault(category, ("", []))[1].append(t)
    return [
        (name, description or f"Tools of the {name} category.", _rows(members))
        for name, (description, members) in grouped.items()
    ]


def _deliver(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    """Resolves a run's future on its own loop (called through ``call_soon_threadsafe``)."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class CodeMode:
    """Code mode over a set of tools: each ``execute_code`` runs in a fresh sandboxed guest.

    ``tools`` go in their ``category`` (or ``"main"``); ``categories`` maps a category name to a
    list of tools or to ``{"description": ..., "tools": [...]}``. ``guest`` is ``"cpython"``
    (default) or ``"rustpython"``. The guest is compiled once per machine (cached in the user
    cache directory, or ``$CODECELL_CACHE_DIR``) and loaded once per process.
    """

    def __init__(
        self,
        tools: Optional[Iterable[Tool]] = None,
        *,
        categories: Optional[Mapping[str, CategorySpec]] = None,
        guest: str = "cpython",
        limits: Optional[Limits] = None,
    ) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a codecell.Limits, got {limits!r}")
        self.guest = guest
        self.limits = limits or Limits()
        self._native = _native.NativeCodeMode(
            guest, str(guest_path(guest)), str(cache_dir()), _categories(tools, categories), self.limits
        )

    def execute_code(self, code: str) -> Outcome:
        """Runs ``code`` in a fresh guest; the GIL is released while it runs."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        return Outcome._from_native(self._native.execute(code))

    async def execute_code_async(self, code: str) -> Outcome:
        """Runs ``code`` without blocking the event loop; cancelling the await stops the run."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        handle = self._native.start(code, loop, future, _deliver)
        try:
            texts = await future
        except asyncio.CancelledError:
            handle.cancel()
            raise
        return Outcome._from_native(texts)

    def session(
        self,
        *,
        max_turns: Optional[int] = None,
        idle_ttl: Optional[float] = None,
        max_total_fuel: Optional[int] = None,
        restart_on_trap: bool = False,
    ) -> Session:
        """A session over these tools and limits: its turns share one interpreter."""
        return Session(self._native.session(max_turns, idle_ttl, max_total_fuel, restart_on_trap))

    def restore_session(
        self,
        journal: str,
        *,
        max_turns: Optional[int] = None,
        idle_ttl: Optional[float] = None,
        max_total_fuel: Optional[int] = None,
        restart_on_trap: bool = False,
    ) -> Session:
        """A session that has replayed ``journal`` (from ``Session.save()``), tool calls answered
        from it; raises ``EngineError`` naming the first turn that printed otherwise."""
        if not isinstance(journal, str):
            raise TypeError(f"journal must be a str, got {type(journal).__name__}")
        native = self._native.restore_session(journal, max_turns, idle_ttl, max_total_fuel, restart_on_trap)
        return Session(native)

    def system_prompt(self) -> str:
        """The system-prompt section that teaches a model ``ls``, ``read`` and ``call_tool``."""
        return self._native.system_prompt()

    def execute_code_tool(self) -> Dict[str, Any]:
        """The ``execute_code`` tool definition (MCP shape: ``name``, ``description``, ``inputSchema``)."""
        return json.loads(self._native.execute_code_tool())

    def as_openai_tool(self) -> Dict[str, Any]:
        """The ``execute_code`` tool as an OpenAI function-calling tool."""
        spec = self.execute_code_tool()
        return {
            "type": "function",
            "function": {"name": spec["name"], "description": spec["description"], "parameters": spec["inputSchema"]},
        }

    def as_anthropic_tool(self) -> Dict[str, Any]:
        """The ``execute_code`` tool as an Anthropic Messages API tool."""
        spec = self.execute_code_tool()
        return {"name": spec["name"], "description": spec["description"], "input_schema": copy.deepcopy(spec["inputSchema"])}

    @staticmethod
    def render(outcome: Outcome) -> str:
        """The text a model reads back: the output, then the error or limit that ended the run."""
        return outcome._rendered

    def ls(self, path: str = "tools/") -> List[str]:
        """A directory of the tool tree, as the guest's ``ls`` shows it."""
        return list(self._native.ls(path))

    def read(self, path: str) -> str:
        """A file of the tool tree (index or stub), as the guest's ``read`` returns it."""
        return self._native.read(path)

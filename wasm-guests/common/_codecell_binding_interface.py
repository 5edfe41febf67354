"""What each guest's `_codecell_binding` module provides to ../common, declared once.

`_codecell_exports` calls `check` on the binding at import time, which for both guests is build
time (each guest's pre-initialisation by the engine): a binding missing a name
fails the build instead of a run. What each name does is documented in `_codecell_exports`.
"""

from typing import Any, List, Optional, Protocol, Tuple, runtime_checkable


@runtime_checkable
class Binding(Protocol):
    """The names every binding has; `encode_args`, `decode_result` and `native_call_tool` are
    optional and looked up where they are used."""

    def ls(self, path: str) -> Tuple[bool, Any]: ...

    def read(self, path: str) -> Tuple[bool, Any]: ...

    def call_tool(self, category: str, name: str, args_json: str) -> Tuple[bool, str]: ...

    def start_tool_call(self, category: str, name: str, args_json: str) -> Tuple[bool, Any]: ...

    def wait_tool_calls(self, timeout_us: Optional[int]) -> List[Tuple[int, bool, str]]: ...

    def cancel_tool_call(self, handle: int) -> None: ...

    def write(self, fd: int, data: bytes) -> bool: ...

    def snippet_result(self, failure: Optional[tuple]) -> Any: ...

    def tool_result(self, ok: bool, value: Any) -> Any: ...


def check(binding) -> None:
    """Raises ImportError naming what `binding` lacks of `Binding`."""
    names = [n for n in dir(Binding) if not n.startswith("_")]
    missing = sorted({n for n in names if not hasattr(binding, n)})
    if missing or not isinstance(binding, Binding):
        raise ImportError("_codecell_binding lacks " + ", ".join(missing or ["(a name)"]))

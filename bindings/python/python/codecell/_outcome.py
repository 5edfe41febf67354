"""What a run returns (`Outcome`) and what it is held to (`Limits`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple


@dataclass(frozen=True)
class Limits:
    """Every bound a run is held to; the defaults are safe for untrusted code.

    The defaults: 5e9 units of fuel (about as many wasm instructions), 128 MiB of guest
    memory, a 10 s wall-clock deadline (host tool calls included), 10,000 bytes of stdout
    (and of stderr), 1,000 tool calls, 1 MiB of JSON per call's arguments and per result,
    and a Python recursion limit of 500 frames.
    """

    fuel: int = 5_000_000_000
    memory_bytes: int = 128 << 20
    deadline_s: float = 10.0
    max_output_bytes: int = 10_000
    max_tool_calls: int = 1_000
    max_tool_args_bytes: int = 1 << 20
    max_tool_result_bytes: int = 1 << 20
    recursion_limit: int = 500

    def __post_init__(self) -> None:
        for name in ("fuel", "memory_bytes", "max_output_bytes", "max_tool_calls",
                     "max_tool_args_bytes", "max_tool_result_bytes", "recursion_limit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
            if value >= 1 << 64:
                raise ValueError(f"Limits.{name} is too large: {value}")
        if self.max_tool_calls >= 1 << 32 or self.recursion_limit >= 1 << 32:
            raise ValueError("Limits.max_tool_calls and recursion_limit must fit in 32 bits")
        deadline = self.deadline_s
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not (
            0 < deadline <= 86_400
        ):
            raise ValueError(f"Limits.deadline_s must be in (0, 86400] seconds, got {deadline!r}")


@dataclass(frozen=True)
class ErrorInfo:
    """The exception or limit that ended a run."""

    type: str
    message: str
    traceback: str


@dataclass(frozen=True)
class ToolCall:
    """One ``call_tool`` the guest made."""

    category: str
    name: str
    ok: bool
    duration_us: int
    start_us: int
    """When the call started, in microseconds since the run started."""
    end_us: int
    """When it completed (or was cancelled), in microseconds since the run started."""
    args_bytes: int
    result_bytes: int


@dataclass(frozen=True)
class Outcome:
    """The result of one run: ``status`` is ``"ok"``, ``"error"`` or ``"limit"``."""

    status: str
    stdout: str
    stderr: str
    truncated: bool
    error: Optional[ErrorInfo]
    limit: Optional[str]
    fuel_used: int
    duration_ms: float
    tool_calls: Tuple[ToolCall, ...]
    _rendered: str = field(default="", repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the code ran to completion without an exception or a limit."""
        return self.status == "ok"

    def to_dict(self) -> Dict[str, Any]:
        """The JSON contract of ``codecell run --json``, as a dict."""
        return {
            "status": self.status,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "truncated": self.truncated,
            "error": None if self.error is None else {
                "type": self.error.type,
                "message": self.error.message,
                "traceback": self.error.traceback,
            },
            "limit": self.limit,
            "fuel_used": self.fuel_used,
            "duration_ms": self.duration_ms,
            "tool_calls": [vars(c).copy() for c in self.tool_calls],
        }

    @classmethod
    def _from_native(cls, texts: Tuple[str, str]) -> "Outcome":
        data, rendered = json.loads(texts[0]), texts[1]
        error = data["error"]
        return cls(
            status=data["status"],
            stdout=data["stdout"],
            stderr=data["stderr"],
            truncated=data["truncated"],
            error=None if error is None else ErrorInfo(**error),
            limit=data["limit"],
            fuel_used=data["fuel_used"],
            duration_ms=data["duration_ms"],
            tool_calls=tuple(ToolCall(**c) for c in data["tool_calls"]),
            _rendered=rendered,
        )

"""`Session`: one sandboxed interpreter kept across turns, made by ``CodeMode.session()``."""

from __future__ import annotations

from typing import Any, Optional

from ._outcome import Outcome


class Session:
    """Turns that share one interpreter: globals, imports, functions and classes persist.

    Each turn is held to the code mode's ``Limits``; the memory cap holds for the whole session,
    beside ``max_turns``, ``idle_ttl`` (seconds between turns) and ``max_total_fuel``. A turn
    that hits a trap-level limit (fuel, deadline, output, tool calls) ends the session, or with
    ``restart_on_trap=True`` starts it over in a fresh interpreter (``state == "restarted"``).
    ``save()`` gives a JSON journal that ``CodeMode.restore_session`` replays exactly: tool
    calls are answered from it, and each replayed turn must print what it printed before.
    """

    def __init__(self, native: Any) -> None:
        self._native = native
        self.state: str = "live"
        """After the last turn: ``"live"``, ``"restarted"`` or ``"ended"``."""

    def execute(self, code: str) -> Outcome:
        """Runs ``code`` as the next turn; the GIL is released while it runs.

        Raises ``EngineError`` once the session has ended (see ``ended``).
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        outcome_json, rendered, state, _reason = self._native.execute(code)
        self.state = state
        return Outcome._from_native((outcome_json, rendered))

    def save(self) -> str:
        """The session's journal (JSON text) for ``CodeMode.restore_session``."""
        return self._native.save()

    def close(self) -> None:
        """Ends the session and frees its interpreter."""
        self._native.close()
        self.state = "ended"

    @property
    def ended(self) -> Optional[str]:
        """Why the session ended, or ``None`` while it runs on."""
        return self._native.ended()

    @property
    def turns(self) -> int:
        """Turns run so far."""
        return self._native.turns()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""`DynamicTools`: tools a model writes (Python with one ``execute(args)``), validated, frozen
in a content-addressed store and run in a fresh guest each time."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional

from . import _native
from ._outcome import Limits
from ._paths import cache_dir, guest_path
from ._tool import Tool

_SCOPES = ("project", "global")


class DynamicTools:
    """The dynamic tools of one session (and project) in the store directory ``store``.

    ``define`` checks a spec's source against the policy, smoke-tests it and stores it;
    ``invoke`` runs the effective version; promotion to project/global scope, activation and
    rollback need ``approve=True`` and are logged. ``tool(name)`` makes a tool a `CodeMode` can
    offer, pinned to the version effective at that moment.
    """

    def __init__(
        self,
        store: "os.PathLike[str] | str",
        *,
        session: str,
        project: Optional[str] = None,
        guest: str = "cpython",
        limits: Optional[Limits] = None,
        store_key_file: "os.PathLike[str] | str | None" = None,
    ) -> None:
        if not isinstance(session, str) or not session:
            raise ValueError("DynamicTools needs a non-empty session id")
        self.limits = limits or Limits()
        self._native = _native.NativeDynamicTools(
            guest,
            str(guest_path(guest)),
            str(cache_dir()),
            os.fspath(store),
            session,
            project,
            self.limits,
            None if store_key_file is None else os.fspath(store_key_file),
        )

    def define(self, spec: Mapping[str, Any]) -> Dict[str, Any]:
        """Validates and stores ``spec`` (``name``, ``description``, ``implementation``, ``input_schema``, ...); returns its manifest."""
        return json.loads(self._native.define(json.dumps(dict(spec))))

    def invoke(self, name: str, args: Optional[Mapping[str, Any]] = None) -> Any:
        """Runs the effective version of ``name`` on ``args`` and returns its result."""
        return json.loads(self._native.invoke(name, json.dumps(dict(args or {}))))

    def list(self) -> List[Dict[str, Any]]:
        """The manifests of every tool this session can use."""
        return json.loads(self._native.list())

    def get(self, name: str) -> Optional[Dict[str, Any]]:
        """The manifest ``name`` resolves to now, or None."""
        text = self._native.get(name)
        return None if text is None else json.loads(text)

    def versions(self, name: Optional[str] = None, scope: Optional[str] = None) -> Dict[str, Any]:
        """Project and global versions (optionally of one name, in one scope) and the audit events."""
        return json.loads(self._native.versions(name, scope))

    def promote(self, name: str, scope: str = "project", *, approve: bool = False) -> Dict[str, Any]:
        """Promotes this session's ``name`` to ``"project"`` or ``"global"``; needs ``approve=True``."""
        return json.loads(self._native.promote(name, _scope(scope), bool(approve)))

    def activate(self, name: str, manifest_id: str, scope: str = "project", *, approve: bool = False) -> Dict[str, Any]:
        """Makes version ``manifest_id`` the active one in ``scope``; needs ``approve=True``."""
        return json.loads(self._native.activate(name, _scope(scope), manifest_id, bool(approve)))

    def rollback(self, name: str, scope: str = "project", *, approve: bool = False) -> Dict[str, Any]:
        """Re-activates the version active before the current one; needs ``approve=True``."""
        return json.loads(self._native.rollback(name, _scope(scope), bool(approve)))

    def load_errors(self) -> List[str]:
        """What the store could not load (corrupt, unsigned or foreign files)."""
        return list(self._native.load_errors())

    def tool(self, name: str, *, category: str = "dynamic") -> Tool:
        """``name`` as a `CodeMode` tool, pinned to the version effective now."""
        manifest = self.get(name)
        if manifest is None:
            raise _native.ToolNotFound(f"no dynamic tool named {name!r}")

        def call_directly(**args: Any) -> Any:
            return self.invoke(name, args)

        made = Tool(
            name,
            manifest["description"],
            manifest["input_schema"],
            call_directly,
            category=category,
            output_schema=manifest.get("output_schema") or None,
        )
        made._dynamic = self._native
        return made


def _scope(scope: str) -> str:
    if scope not in _SCOPES:
        raise ValueError(f"scope must be one of {', '.join(_SCOPES)}, got {scope!r}")
    return scope

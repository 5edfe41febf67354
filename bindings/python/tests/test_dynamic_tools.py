"""DynamicTools: define, invoke, govern, and use from code mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codecell
from conftest import FIXTURES

DOUBLE = {
    "name": "double",
    "description": "Double a number.",
    "implementation": "def execute(args):\n    return {'value': args['x'] * 2}\n",
    "input_schema": {"type": "object", "properties": {"x": {"type": "number", "default": 1}}, "required": ["x"]},
    "output_schema": {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]},
}


@pytest.fixture
def store(tmp_path: Path) -> codecell.DynamicTools:
    return codecell.DynamicTools(tmp_path / "store", session="s1", project="p1")


def test_define_invoke_and_list(store: codecell.DynamicTools) -> None:
    manifest = store.define(DOUBLE)
    assert manifest["name"] == "double" and manifest["manifest_id"].startswith("dyn-")
    assert store.invoke("double", {"x": 21}) == {"value": 42}
    assert [m["name"] for m in store.list()] == ["double"]
    assert store.get("double")["manifest_id"] == manifest["manifest_id"]
    assert store.get("nothing") is None


def test_a_fixture_tool_from_the_reference_set(store: codecell.DynamicTools) -> None:
    spec = json.loads((FIXTURES / "dynamic" / "stats_summary.json").read_text())
    store.define(spec)
    assert store.invoke("stats_summary", {"values": [1, 2, 3]})["mean"] == 2.0


def test_refusals_are_exception_classes(store: codecell.DynamicTools) -> None:
    bad = dict(DOUBLE, name="escape", implementation="import os\ndef execute(args):\n    return os.listdir('/')\n")
    with pytest.raises(codecell.PolicyViolation, match="os"):
        store.define(bad)
    store.define(DOUBLE)
    with pytest.raises(codecell.InvalidArguments):
        store.invoke("double", {"x": "two"})
    with pytest.raises(codecell.ToolNotFound):
        store.invoke("missing", {})
    with pytest.raises(codecell.DynamicToolError):
        store.define(DOUBLE)  # already defined in this session


def test_governance_needs_approval_and_is_logged(store: codecell.DynamicTools) -> None:
    first = store.define(DOUBLE)
    with pytest.raises(codecell.ApprovalRequired):
        store.promote("double", "project")
    promoted = store.promote("double", "project", approve=True)
    assert promoted["scope"] == "project"
    report = store.versions("double")
    assert [e["operation"] for e in report["events"]] == ["promote"]
    with pytest.raises(codecell.ApprovalRequired):
        store.rollback("double", "project")
    with pytest.raises(codecell.ToolNotFound):
        store.rollback("double", "project", approve=True)  # nothing was active before
    with pytest.raises(codecell.ApprovalRequired):
        store.activate("double", promoted["manifest_id"], "project")
    store.activate("double", promoted["manifest_id"], "project", approve=True)
    assert len(store.versions("double")["events"]) == 2
    with pytest.raises(ValueError, match="scope"):
        store.promote("double", "session", approve=True)
    assert first["scope"] == "session"


def test_a_model_defined_tool_called_from_code_mode(store: codecell.DynamicTools) -> None:
    store.define(DOUBLE)
    mode = codecell.CodeMode(tools=[store.tool("double")])
    outcome = mode.execute_code(
        'print("def double" in read("tools/dynamic/double.py"))\n'
        "from tools.dynamic import double\nprint(double(x=4))"
    )
    assert outcome.stdout == "True\n{'value': 8}\n", outcome
    with pytest.raises(codecell.ToolNotFound):
        store.tool("missing")


def test_a_session_id_is_required(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="session"):
        codecell.DynamicTools(tmp_path, session="")


def test_a_corrupt_store_file_is_reported_not_loaded(tmp_path: Path) -> None:
    store = codecell.DynamicTools(tmp_path, session="s1", project="p1")
    store.define(DOUBLE)
    store.promote("double", "project", approve=True)
    assert store.load_errors() == []
    planted = tmp_path / "scoped" / "manifests" / ("dyn-" + "0" * 64 + ".json")
    planted.write_text("{not json")
    reopened = codecell.DynamicTools(tmp_path, session="s2", project="p1")
    assert reopened.invoke("double", {"x": 2}) == {"value": 4}  # the good version still serves
    assert any(planted.name in e for e in reopened.load_errors()), reopened.load_errors()

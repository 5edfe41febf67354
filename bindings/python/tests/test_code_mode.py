"""CodeMode: runs, the outcome, the tree, the prompt and the tool definitions."""

from __future__ import annotations

import json

import pytest

import codecell
from conftest import add


def test_a_snippet_reads_the_stub_and_calls_the_tool(guest: str) -> None:
    mode = codecell.CodeMode(tools=[add], guest=guest)
    outcome = mode.execute_code(
        'src = read("tools/math/add.py")\n'
        'print("def add" in src, "The first addend." in src)\n'
        "from tools.math import add\n"
        "print(add(2, 3))\n"
        'print(call_tool("math", "add", a=40, b=2))\n'
    )
    assert outcome.ok, outcome
    assert outcome.stdout == "True True\n5\n42\n"
    assert outcome.status == "ok" and outcome.error is None and outcome.limit is None
    assert [(c.category, c.name, c.ok) for c in outcome.tool_calls] == [("math", "add", True)] * 2
    assert outcome.fuel_used > 0 and outcome.duration_ms > 0


def test_outcome_is_frozen_and_round_trips_to_the_json_contract(math_mode: codecell.CodeMode) -> None:
    outcome = math_mode.execute_code("print('hi')\nraise ValueError('boom')")
    assert not outcome.ok and outcome.status == "error"
    assert outcome.error is not None
    assert (outcome.error.type, outcome.error.message) == ("ValueError", "boom")
    assert "line 2" in outcome.error.traceback
    with pytest.raises(AttributeError):
        outcome.status = "ok"  # type: ignore[misc]
    data = outcome.to_dict()
    assert list(data) == ["status", "stdout", "stderr", "truncated", "error", "limit", "fuel_used", "duration_ms", "tool_calls"]
    assert data["error"]["type"] == "ValueError"
    assert json.loads(json.dumps(data)) == data
    rendered = codecell.CodeMode.render(outcome)
    assert rendered.startswith("hi\n") and "ValueError: boom" in rendered


def test_render_says_when_there_is_no_output(math_mode: codecell.CodeMode) -> None:
    assert math_mode.render(math_mode.execute_code("x = 1")) == "(no output)"


def test_the_tree_prompt_and_tool_definitions(math_mode: codecell.CodeMode) -> None:
    assert math_mode.ls("tools/") == ["__index__.md", "math/"]
    assert "Add two integers." in math_mode.read("tools/math/__index__.md")
    prompt = math_mode.system_prompt()
    assert "execute_code" in prompt and "`math`" in prompt
    spec = math_mode.execute_code_tool()
    assert spec["name"] == "execute_code"
    assert spec["inputSchema"]["required"] == ["code"]
    openai = math_mode.as_openai_tool()
    assert openai["type"] == "function"
    assert openai["function"]["parameters"] == spec["inputSchema"]
    anthropic = math_mode.as_anthropic_tool()
    assert anthropic == {"name": "execute_code", "description": spec["description"], "input_schema": spec["inputSchema"]}


def test_categories_with_descriptions_and_the_default_category() -> None:
    @codecell.tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    mode = codecell.CodeMode(tools=[shout], categories={"calc": {"description": "Arithmetic.", "tools": [add]}})
    assert mode.ls("tools/") == ["__index__.md", "calc/", f"{codecell.DEFAULT_CATEGORY}/"]
    assert "Arithmetic." in mode.read("tools/__index__.md")
    outcome = mode.execute_code("from tools.main import shout\nfrom tools.calc import add\nprint(shout('hi'), add(1, 2))")
    assert outcome.stdout == "HI 3\n", outcome


def test_without_tools_the_tree_is_refused_in_the_guest() -> None:
    mode = codecell.CodeMode()
    assert mode.execute_code("print(6 * 7)").stdout == "42\n"
    outcome = mode.execute_code("ls('tools/')")
    assert outcome.status == "error" and outcome.error is not None
    with pytest.raises(ValueError, match="no tools"):
        mode.ls()


def test_arguments_are_checked_against_the_schema_before_the_tool_runs(math_mode: codecell.CodeMode) -> None:
    outcome = math_mode.execute_code(
        "try:\n    call_tool('math', 'add', a='two', b=2)\nexcept ToolError as e:\n    print('refused', 'a' in str(e))"
    )
    assert outcome.stdout == "refused True\n", outcome
    assert outcome.tool_calls[0].ok is False


def test_bad_arguments_to_codemode_are_python_errors() -> None:
    with pytest.raises(TypeError, match="codecell.Tool"):
        codecell.CodeMode(tools=[print])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Limits"):
        codecell.CodeMode(limits={"fuel": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown guest"):
        codecell.CodeMode(guest="jython")
    with pytest.raises(TypeError, match="str"):
        codecell.CodeMode().execute_code(b"print(1)")  # type: ignore[arg-type]

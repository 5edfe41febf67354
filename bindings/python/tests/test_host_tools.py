"""Host tools written in Python: results, exceptions, bad results, async tools, pydantic."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pydantic
import pytest

import codecell

CATCH = "try:\n    print({call})\nexcept ToolError as e:\n    print('ToolError:', e)\n"


def run(tool: codecell.Tool, call: str) -> codecell.Outcome:
    return codecell.CodeMode(tools=[tool]).execute_code(CATCH.format(call=call))


def test_an_exception_becomes_tool_error_with_its_message_and_no_host_traceback() -> None:
    @codecell.tool
    def fail(city: str) -> str:
        """Always fails."""
        raise LookupError(f"no weather for {city}")

    outcome = run(fail, "call_tool('main', 'fail', city='Atlantis')")
    assert outcome.stdout == "ToolError: no weather for Atlantis\n", outcome
    assert "Traceback" not in outcome.stdout and "test_host_tools" not in outcome.stdout + outcome.stderr
    assert outcome.tool_calls[0].ok is False


def test_an_uncaught_tool_error_ends_the_run_as_an_error() -> None:
    @codecell.tool
    def fail() -> None:
        """Always fails."""
        raise RuntimeError("nope")

    outcome = codecell.CodeMode(tools=[fail]).execute_code("call_tool('main', 'fail')")
    assert outcome.status == "error" and outcome.error is not None
    assert outcome.error.type == "ToolError" and "nope" in outcome.error.message


def test_a_result_that_is_not_json_is_a_clear_tool_error() -> None:
    @codecell.tool
    def opaque() -> object:
        """Returns an object."""
        return object()

    @codecell.tool
    def nan() -> float:
        """Returns NaN."""
        return float("nan")

    assert "not JSON-serialisable" in run(opaque, "call_tool('main', 'opaque')").stdout
    assert "not JSON-serialisable" in run(nan, "call_tool('main', 'nan')").stdout


class Point(pydantic.BaseModel):
    x: float
    y: float


@dataclasses.dataclass
class Box:
    width: float


def test_pydantic_arguments_and_results_and_dataclass_results() -> None:
    @codecell.tool
    def norm(p: Point) -> Point:
        """Scales a point."""
        assert isinstance(p, Point)
        return Point(x=p.x * 2, y=p.y * 2)

    @codecell.tool
    def box() -> Box:
        """A box."""
        return Box(width=2.5)

    assert run(norm, "call_tool('main', 'norm', p={'x': 1, 'y': 2})").stdout == "{'x': 2.0, 'y': 4.0}\n"
    assert run(box, "call_tool('main', 'box')").stdout == "{'width': 2.5}\n"


def test_async_tools_in_a_sync_run() -> None:
    @codecell.tool
    async def slow_double(x: int) -> int:
        """Doubles after a pause."""
        await asyncio.sleep(0.01)
        return 2 * x

    @codecell.tool
    async def async_fail() -> None:
        """Fails."""
        await asyncio.sleep(0)
        raise ValueError("async nope")

    assert run(slow_double, "call_tool('main', 'slow_double', x=21)").stdout == "42\n"
    assert run(async_fail, "call_tool('main', 'async_fail')").stdout == "ToolError: async nope\n"


def test_async_tools_of_an_async_run_execute_on_the_callers_loop() -> None:
    seen = []

    @codecell.tool
    async def where() -> str:
        """Which loop runs me."""
        seen.append(asyncio.get_running_loop())
        return threading.current_thread().name

    mode = codecell.CodeMode(tools=[where])

    async def main() -> None:
        outcome = await mode.execute_code_async("print(call_tool('main', 'where'))")
        assert outcome.stdout == f"{threading.current_thread().name}\n", outcome
        assert seen == [asyncio.get_running_loop()]

    asyncio.run(main())


def test_a_sync_tool_runs_with_the_gil_in_a_worker_thread() -> None:
    @codecell.tool
    def thread_name() -> str:
        """The thread running the tool."""
        return threading.current_thread().name

    outcome = run(thread_name, "call_tool('main', 'thread_name')")
    assert outcome.ok and outcome.stdout.strip() != threading.current_thread().name


def test_a_tool_that_never_returns_is_cut_by_the_deadline() -> None:
    release = threading.Event()

    @codecell.tool
    def hang() -> None:
        """Blocks until released."""
        release.wait(30)

    mode = codecell.CodeMode(tools=[hang], limits=codecell.Limits(deadline_s=0.5))
    try:
        outcome = mode.execute_code("call_tool('main', 'hang')")
    finally:
        release.set()
    assert outcome.status == "limit" and outcome.limit == "deadline", outcome
    assert outcome.duration_ms < 5_000


def test_tool_errors_from_raw_schema_tools_and_keyword_calls() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    t = codecell.Tool("search", "Search.", schema, lambda q: {"hits": [q]}, category="web")
    outcome = codecell.CodeMode(tools=[t]).execute_code("from tools.web import search\nprint(search(q='x'))")
    assert outcome.stdout == "{'hits': ['x']}\n", outcome


@pytest.mark.parametrize("bad", [{"type": "object", "$ref": "#/nowhere"}, {"type": "object", "properties": 3}])
def test_an_invalid_schema_is_a_catalog_error(bad: dict) -> None:
    t = codecell.Tool("t", "", bad, print)
    with pytest.raises(codecell.CatalogError):
        codecell.CodeMode(tools=[t])


def test_a_tool_may_run_code_mode_itself_sync_and_async() -> None:
    inner = codecell.CodeMode()

    @codecell.tool
    def nested(code: str) -> str:
        """Runs code in another sandbox."""
        return inner.execute_code(code).stdout

    mode = codecell.CodeMode(tools=[nested])
    snippet = "print(call_tool('main', 'nested', code='print(6 * 7)'))"
    assert mode.execute_code(snippet).stdout == "42\n\n"

    async def main() -> str:
        return (await mode.execute_code_async(snippet)).stdout

    assert asyncio.run(main()) == "42\n\n"

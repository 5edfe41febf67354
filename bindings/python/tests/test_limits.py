"""Every limit, tried from Python: the run ends on it and says which."""

from __future__ import annotations

import pytest

import codecell


def limited(**limits: object) -> codecell.CodeMode:
    return codecell.CodeMode(tools=[], limits=codecell.Limits(**limits))  # type: ignore[arg-type]


def test_fuel() -> None:
    outcome = limited(fuel=50_000_000).execute_code("while True:\n    pass")
    assert (outcome.status, outcome.limit) == ("limit", "fuel")
    assert outcome.error is not None and outcome.error.type == "OutOfFuel"


def test_deadline() -> None:
    outcome = limited(deadline_s=0.3, fuel=10**13).execute_code("while True:\n    pass")
    assert (outcome.status, outcome.limit) == ("limit", "deadline")
    assert outcome.duration_ms < 5_000


def test_output() -> None:
    outcome = limited(max_output_bytes=100).execute_code("print('x' * 1000)")
    assert (outcome.status, outcome.limit) == ("limit", "output")
    assert outcome.truncated and len(outcome.stdout) <= 100


def test_memory() -> None:
    outcome = limited(memory_bytes=64 << 20).execute_code("x = bytearray(200 * 1024 * 1024)")
    assert outcome.status in ("limit", "error")
    assert outcome.limit == "memory" or (outcome.error is not None and outcome.error.type == "MemoryError")


def test_tool_calls() -> None:
    @codecell.tool
    def ping() -> str:
        """Pong."""
        return "pong"

    mode = codecell.CodeMode(tools=[ping], limits=codecell.Limits(max_tool_calls=3))
    outcome = mode.execute_code("for _ in range(10):\n    call_tool('main', 'ping')")
    assert (outcome.status, outcome.limit) == ("limit", "tool_calls")
    assert len(outcome.tool_calls) == 3


def test_tool_result_size() -> None:
    @codecell.tool
    def big() -> str:
        """A large result."""
        return "x" * 10_000

    mode = codecell.CodeMode(tools=[big], limits=codecell.Limits(max_tool_result_bytes=1_000))
    outcome = mode.execute_code("try:\n    call_tool('main', 'big')\nexcept ToolError as e:\n    print('refused')")
    assert outcome.stdout == "refused\n", outcome


def test_recursion() -> None:
    outcome = limited(recursion_limit=50).execute_code("def f(n):\n    return f(n + 1)\nf(0)")
    assert outcome.error is not None and outcome.error.type == "RecursionError"


@pytest.mark.parametrize(
    "bad",
    [{"fuel": 0}, {"fuel": -1}, {"fuel": True}, {"fuel": 1.5}, {"memory_bytes": 1 << 70},
     {"deadline_s": 0}, {"deadline_s": float("inf")}, {"deadline_s": float("nan")}, {"max_tool_calls": 1 << 40}],
)
def test_bad_limits_are_refused_where_they_are_written(bad: dict) -> None:
    with pytest.raises(ValueError):
        codecell.Limits(**bad)


def test_a_memory_cap_below_the_guests_start_is_an_engine_error() -> None:
    with pytest.raises(codecell.EngineError, match="memory cap"):
        limited(memory_bytes=1 << 20).execute_code("print(1)")

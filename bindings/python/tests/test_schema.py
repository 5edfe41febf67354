"""The decorator turns signatures, type hints and docstrings into tool definitions."""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

import pydantic
import pytest

import codecell


def test_name_description_and_args_come_from_the_function() -> None:
    @codecell.tool
    def weather(city: str, days: int = 3, metric: bool = True) -> dict:
        """Forecast for a city.

        More detail on a second paragraph.

        Args:
            city: The city name,
                for example Paris.
            days (int): How many days.

        Returns:
            The forecast.
        """
        return {}

    assert weather.name == "weather"
    assert weather.description == "Forecast for a city.\n\nMore detail on a second paragraph."
    assert weather.category is None
    assert weather.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name, for example Paris."},
            "days": {"type": "integer", "description": "How many days.", "default": 3},
            "metric": {"type": "boolean", "default": True},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert weather("Paris") == {}  # the decorated function stays callable


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_containers_literals_optionals_and_annotations() -> None:
    @codecell.tool(name="shape", description="Override.", category="geo")
    def f(
        tags: List[str],
        weights: Dict[str, float],
        mode: Literal["fast", "slow"],
        limit: Optional[int] = None,
        pair: Tuple[int, str] = (1, "a"),
        many: Tuple[float, ...] = (),
        either: Union[int, str] = 0,
        color: Color = Color.RED,
        note: Annotated[str, "A note for the log."] = "",
        anything: Any = None,
    ) -> None:
        """Ignored, the description is given."""

    assert (f.name, f.description, f.category) == ("shape", "Override.", "geo")
    p = f.input_schema["properties"]
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert p["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert p["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert p["many"] == {"type": "array", "items": {"type": "number"}, "default": []}
    assert p["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0}
    assert p["color"] == {"enum": ["red", "blue"]}  # an Enum default is not JSON: not advertised
    assert p["note"] == {"type": "string", "description": "A note for the log.", "default": ""}
    assert p["anything"] == {"default": None}
    assert f.input_schema["required"] == ["tags", "weights", "mode"]


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None syntax needs Python 3.10")
def test_pep604_unions() -> None:
    namespace: Dict[str, Any] = {"codecell": codecell}
    exec("@codecell.tool\ndef f(x: int | None = None) -> None:\n    'Doc.'\n", namespace)
    assert namespace["f"].input_schema["properties"]["x"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]


class Point(pydantic.BaseModel):
    x: float
    y: float = 0.0


class Segment(pydantic.BaseModel):
    start: Point
    end: Point


class Options(TypedDict, total=False):
    verbose: bool


def test_pydantic_models_and_typeddicts_become_object_schemas() -> None:
    @codecell.tool
    def length(segment: Segment, options: Options) -> float:
        """Length of a segment."""
        return 0.0

    schema = length.input_schema
    segment = schema["properties"]["segment"]
    assert segment["required"] == ["start", "end"]
    assert segment["properties"]["start"]["$ref"] == "#/$defs/Point"  # hoisted to the root: resolves
    assert set(schema["$defs"]) == {"Point"}
    assert schema["properties"]["options"] == {
        "type": "object",
        "properties": {"verbose": {"type": "boolean"}},
        "required": [],
    }


def test_type_hints_that_do_not_resolve_name_the_function() -> None:
    def f(x: "Undefined") -> None:  # type: ignore[name-defined]  # noqa: F821
        """Doc."""

    with pytest.raises(TypeError, match="cannot read the type hints of .*f: name 'Undefined'"):
        codecell.tool(f)


def test_signatures_no_schema_can_describe_are_refused() -> None:
    with pytest.raises(TypeError, match=r"\*args"):
        codecell.tool(lambda *args: None)
    with pytest.raises(TypeError, match="JSON object keys"):

        @codecell.tool
        def f(m: Dict[int, str]) -> None: ...

    with pytest.raises(TypeError, match="no JSON Schema"):

        @codecell.tool
        def g(x: complex) -> None: ...


def test_tool_from_an_existing_schema() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    t = codecell.Tool("search", "Search the web.", schema, lambda q: [q], category="web")
    assert t.to_dict() == {"name": "search", "description": "Search the web.", "inputSchema": schema}
    schema["properties"]["q"]["type"] = "integer"
    assert t.input_schema["properties"]["q"]["type"] == "string"  # the tool keeps its own copy
    openai = codecell.Tool.from_openai(
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": schema}}, print
    )
    assert (openai.name, openai.description, openai.input_schema) == ("f", "d", schema)
    mcp = codecell.Tool.from_mcp({"name": "m", "description": "d", "inputSchema": schema}, print)
    assert mcp.input_schema == schema
    with pytest.raises(ValueError, match="not JSON"):
        codecell.Tool("bad", "", {"type": "object", "default": float("nan")}, print)
    with pytest.raises(ValueError, match="non-empty name"):
        codecell.Tool("", "", {}, print)
    with pytest.raises(TypeError, match="callable"):
        codecell.Tool("x", "", {}, 3)  # type: ignore[arg-type]

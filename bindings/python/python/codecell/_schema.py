"""A function's signature and docstring as a tool: description and ``inputSchema``.

Type hints map to JSON Schema: ``str``/``int``/``float``/``bool``/``None``, ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]``, ``Literal[...]``, ``Optional[X]``/``X | None``,
``Union[...]``, enums, ``Annotated[X, "description"]``, ``TypedDict`` and pydantic models;
defaults become ``default`` (and make a parameter optional); the docstring's Google-style
``Args:`` section describes the parameters.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import json
import re
import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

try:  # Python 3.9's typing has no is_typeddict.
    from typing import is_typeddict as _is_typeddict
except ImportError:  # pragma: no cover - 3.9 only
    def _is_typeddict(tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")

_UNION_TYPES: Tuple[Any, ...] = (typing.Union,)
if sys.version_info >= (3, 10):
    import types

    _UNION_TYPES = (typing.Union, types.UnionType)

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """Splits a docstring into the tool description and the ``Args:`` descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: List[str] = []
    args: Dict[str, str] = {}
    section: Optional[str] = None
    current: Optional[str] = None
    arg_indent = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current, arg_indent = header.group(1).lower(), None, None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters"):
            indent = len(line) - len(line.lstrip())
            match = _ARG.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and line.strip():
                args[current] = (args[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), args


class _Defs:
    """Shared ``$defs`` for pydantic models, hoisted to the root so their ``$ref``s resolve."""

    def __init__(self) -> None:
        self.defs: Dict[str, Any] = {}


def _pydantic_model(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")


def type_schema(tp: Any, defs: _Defs, where: str) -> Dict[str, Any]:
    """The JSON Schema of one type hint."""
    if tp is inspect.Parameter.empty or tp is Any or tp is object:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp in (list, List, collections.abc.Sequence, tuple, Tuple, set, frozenset):
        return {"type": "array"}
    if tp in (dict, Dict, collections.abc.Mapping):
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if _pydantic_model(tp):
        schema = tp.model_json_schema(ref_template="#/$defs/{model}")
        defs.defs.update(schema.pop("$defs", {}))
        return schema
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = sorted(getattr(tp, "__required_keys__", hints.keys()))
        return {
            "type": "object",
            "properties": {k: type_schema(v, defs, f"{where}.{k}") for k, v in hints.items()},
            "required": required,
        }
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        schema = type_schema(args[0], defs, where)
        for extra in args[1:]:
            if isinstance(extra, str):
                schema = {**schema, "description": extra}
            elif hasattr(extra, "description") and isinstance(extra.description, str):
                schema = {**schema, "description": extra.description}  # pydantic Field(...)
        return schema
    if origin is typing.Literal:
        schema: Dict[str, Any] = {"enum": list(args)}
        kinds = {type(a) for a in args}
        if len(kinds) == 1:
            only = type_schema(kinds.pop(), defs, where).get("type")
            if only:
                schema["type"] = only
        return schema
    if origin in _UNION_TYPES:
        options = [type_schema(a, defs, where) for a in args]
        return {"anyOf": options}
    if origin in (list, collections.abc.Sequence, set, frozenset, collections.abc.Set):
        schema = {"type": "array"}
        if args:
            schema["items"] = type_schema(args[0], defs, where)
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], defs, where)}
        return {
            "type": "array",
            "prefixItems": [type_schema(a, defs, where) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, collections.abc.Mapping):
        schema = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise TypeError(f"{where}: JSON object keys are strings, not {args[0]!r}")
            schema["additionalProperties"] = type_schema(args[1], defs, where)
        return schema
    raise TypeError(f"{where}: no JSON Schema for the type {tp!r}")


def function_schema(func: Callable[..., Any]) -> Tuple[str, Dict[str, Any], Dict[str, Callable[[Any], Any]]]:
    """The description, ``inputSchema`` and per-parameter converters (pydantic models) of ``func``."""
    description, arg_docs = parse_docstring(inspect.getdoc(func))
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as error:
        raise TypeError(f"cannot read the type hints of {func.__qualname__}: {error}") from error
    defs = _Defs()
    properties: Dict[str, Any] = {}
    required: List[str] = []
    converters: Dict[str, Callable[[Any], Any]] = {}
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{func.__qualname__}: *{name} cannot be described by a JSON Schema")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{func.__qualname__}: positional-only {name} cannot be passed by name")
        hint = hints.get(name, inspect.Parameter.empty)
        schema = type_schema(hint, defs, f"{func.__qualname__}({name})")
        if name in arg_docs and arg_docs[name] and "description" not in schema:
            schema = {**schema, "description": arg_docs[name]}
        if param.default is param.empty:
            required.append(name)
        else:
            try:
                schema = {**schema, "default": json.loads(json.dumps(param.default))}
            except (TypeError, ValueError):
                pass  # A default JSON cannot carry is applied by Python, just not advertised.
        properties[name] = schema
        model = _model_in(hint)
        if model is not None:
            converters[name] = model.model_validate
    input_schema: Dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if defs.defs:
        input_schema["$defs"] = defs.defs
    return description, input_schema, converters


def _model_in(hint: Any) -> Any:
    """The pydantic model a parameter's arguments must be converted to, if any."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if _pydantic_model(hint):
        return hint
    if typing.get_origin(hint) in _UNION_TYPES:
        models = [a for a in typing.get_args(hint) if _pydantic_model(a)]
        if len(models) == 1:
            return _OptionalModel(models[0])
    return None


class _OptionalModel:
    """Converts a dict to the model and leaves ``None`` alone (``Optional[Model]``)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def model_validate(self, value: Any) -> Any:
        return None if value is None else self.model.model_validate(value)

"""The `codecell` module seen by guest code: ls, read, call_tool and ToolError.

The RustPython twin of ../../cpython/sandbox_api.py. The native module `_codecell_host` wraps the
three host imports (the only way out of the sandbox); each returns `(ok, value)`, where `value` is
the host's error message when `ok` is false. Errors become ordinary Python exceptions.
"""

import json
import sys
import types

import _codecell_host as _host


class ToolError(Exception):
    """A tool call failed: unknown tool, arguments refused by the schema, or the tool itself failed."""


# Tracebacks and reprs name it as the guest code imports it: `codecell.ToolError`.
ToolError.__module__ = "codecell"


def ls(path: str = "tools/") -> list:
    """Lists a directory of the tool tree; directories end with '/'."""
    if not isinstance(path, str):
        raise TypeError("ls() path must be a str, not " + type(path).__name__)
    ok, value = _host.ls(path)
    if not ok:
        raise FileNotFoundError(value)
    return list(value)


def read(path: str) -> str:
    """Reads a file of the tool tree, e.g. read('tools/__index__.md')."""
    if not isinstance(path, str):
        raise TypeError("read() path must be a str, not " + type(path).__name__)
    ok, value = _host.read(path)
    if not ok:
        raise FileNotFoundError(value)
    return value


def call_tool(category: str, name: str, /, **kwargs):
    """Calls tool `name` of `category` with keyword arguments; returns its JSON result as Python values."""
    if not isinstance(category, str) or not isinstance(name, str):
        raise TypeError("call_tool(category, name, **kwargs): category and name must be str")
    try:
        args_json = json.dumps(kwargs, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ToolError("arguments of " + category + "/" + name + " are not JSON: " + str(e)) from None
    ok, value = _host.call_tool(category, name, args_json)
    if not ok:
        raise ToolError(value)
    return json.loads(value)


def install() -> types.ModuleType:
    """Registers the `codecell` module so that stubs can `from codecell import call_tool`."""
    module = types.ModuleType("codecell", "Host functions of the codecell sandbox.")
    module.ls = ls
    module.read = read
    module.call_tool = call_tool
    module.ToolError = ToolError
    sys.modules["codecell"] = module
    return module

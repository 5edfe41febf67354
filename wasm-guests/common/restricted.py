"""Runs a dynamic tool's `execute(args)` the way the reference worker does.

Shared by both guests (frozen into each: CPython's freeze.py, RustPython's `py_freeze!`).

The tool sees only a small set of builtins (no print, open, getattr, type, ...) and an import
function that admits the roots its manifest declared, and only absolute imports. The host has
validated the source already; this is the second wall, not the first.
"""

import builtins
import json

_SAFE_BUILTIN_NAMES = (
    "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError", "LookupError",
    "RuntimeError", "TypeError", "ValueError", "ZeroDivisionError", "abs", "all", "any", "bool",
    "bytes", "callable", "chr", "complex", "dict", "divmod", "enumerate", "filter", "float",
    "format", "frozenset", "hash", "hex", "int", "isinstance", "issubclass", "iter", "len", "list",
    "map", "max", "min", "next", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "zip",
)
_SAFE_BUILTINS = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
_real_import = builtins.__import__


def _guard(allowed: frozenset):
    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        root = str(name).split(".", 1)[0]
        if level or root not in allowed:
            raise ImportError("dynamic tool import denied: " + root)
        return _real_import(name, globals, locals, fromlist, level)

    return guarded_import


def run_tool(source: str, imports, args_json: str) -> str:
    """Executes `source`, calls `execute(args)` and returns the result as canonical JSON."""
    arguments = json.loads(args_json)
    namespace = {
        "__name__": "__codecell_dynamic_tool__",
        "__builtins__": dict(_SAFE_BUILTINS, __import__=_guard(frozenset(imports))),
    }
    exec(compile(source, "<tool>", "exec"), namespace, namespace)
    execute = namespace.get("execute")
    if not callable(execute):
        raise RuntimeError("dynamic tool defines no execute(args) function")
    result = execute(arguments)
    # The size limit is the caller's (`_codecell_exports.run_tool`), from the run's options.
    return json.dumps(result, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

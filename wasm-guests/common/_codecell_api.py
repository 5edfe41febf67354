"""The `codecell` module seen by guest code: ls, read, call_tool and ToolError.

`call_tool_async` is added by `_codecell_async`, which owns the event loop it needs.

These wrap the three host imports, the only way out of the sandbox; each guest's
`_codecell_binding` reaches them and returns `(True, value)` or `(False, the host's message)`.
Errors from the host become ordinary Python exceptions so that snippets can catch them.
"""

import json
import sys
import types

import _codecell_binding as _binding


class ToolError(Exception):
    """A tool call failed: unknown tool, arguments refused by the schema, or the tool itself failed."""


# Tracebacks and reprs name it as the guest code imports it: `codecell.ToolError`.
ToolError.__module__ = "codecell"


def _reused_encoder():
    """`json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode`, built once.

    `encode` makes a new C encoder (and its Python wrappers run) on every call; here one C
    encoder is kept, with its circular-reference markers cleared before each use (a failed
    encoding leaves entries behind). Without the C accelerator, the plain `encode` is used.
    """
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
    # The positional arguments of CPython 3.13+ (`allow_nan` last); a different signature fails
    # here, at build time, not in a run.
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    markers = {}
    c_encode = make(markers, encoder.default, json.encoder.encode_basestring, None,
                    encoder.key_separator, encoder.item_separator, False, False, False)

    def encode_args(obj):
        markers.clear()
        return "".join(c_encode(obj, 0))

    return encode_args


def _scanning_decoder():
    """`json.JSONDecoder().decode` for the host's results, minus its Python layers.

    The host sends compact, valid JSON, which one call of the (C) scanner reads whole; anything
    else (trailing text, a scan failure) goes through `decode` itself, for its exact error.
    """
    decoder = json.JSONDecoder()
    scan_once, decode = decoder.scan_once, decoder.decode

    def decode_result(text):
        try:
            value, end = scan_once(text, 0)
        except StopIteration:
            return decode(text)
        return value if end == len(text) else decode(text)

    return decode_result


# A binding may bring native codecs with the same refusals (RustPython's pure-Python json costs
# several times a whole host round trip); otherwise the stdlib's C codecs, set up once.
_ENCODE_ARGS = getattr(_binding, "encode_args", None) or _reused_encoder()
_DECODE_RESULT = getattr(_binding, "decode_result", None) or _scanning_decoder()


def ls(path: str = "tools/") -> list:
    """Lists a directory of the tool tree; directories end with '/'."""
    if not isinstance(path, str):
        raise TypeError("ls() path must be a str, not " + type(path).__name__)
    ok, value = _binding.ls(path)
    if not ok:
        raise FileNotFoundError(value) from None
    return list(value)


def read(path: str) -> str:
    """Reads a file of the tool tree, e.g. read('tools/__index__.md')."""
    if not isinstance(path, str):
        raise TypeError("read() path must be a str, not " + type(path).__name__)
    ok, value = _binding.read(path)
    if not ok:
        raise FileNotFoundError(value) from None
    return value


def encode_call(category, name, kwargs, function="call_tool"):
    """The JSON arguments of a call, after the checks every form of call_tool makes."""
    if not isinstance(category, str) or not isinstance(name, str):
        raise TypeError(function + "(category, name, **kwargs): category and name must be str")
    try:
        return _ENCODE_ARGS(kwargs)
    except (TypeError, ValueError) as e:
        raise ToolError("arguments of " + category + "/" + name + " are not JSON: " + str(e)) from None


def decode_result(text):
    """A tool's JSON result (from the host) as Python values."""
    return _DECODE_RESULT(text)


def call_tool(category: str, name: str, /, **kwargs):
    """Calls tool `name` of `category` with keyword arguments; returns its JSON result as Python values."""
    # The RustPython guest replaces this with a native twin (`ToolCaller`, rustpython/src/native.rs);
    # `call_tool_implementations_agree` in tests/all/code_mode.rs keeps their checks and errors equal.
    args_json = encode_call(category, name, kwargs)
    ok, value = _binding.call_tool(category, name, args_json)
    if not ok:
        raise ToolError(value) from None
    return _DECODE_RESULT(value)


# A binding may bring the whole call natively, with the same checks and errors (RustPython: the
# frame of the function above cost more than the host round trip).
if hasattr(_binding, "native_call_tool"):
    call_tool = _binding.native_call_tool(ToolError)


def install() -> types.ModuleType:
    """Registers the `codecell` module so that stubs can `from codecell import call_tool`."""
    module = types.ModuleType("codecell", "Host functions of the codecell sandbox.")
    module.ls = ls
    module.read = read
    module.call_tool = call_tool
    module.ToolError = ToolError
    sys.modules["codecell"] = module
    return module

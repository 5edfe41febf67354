"""Stdlib modules loaded at start-up, the same list as ../../cpython/preload.py.

The stdlib is frozen into the guest, so every module is importable at run time anyway; importing
these once when the VM is built (and, pre-initialised, at build time) keeps a snippet's first
`import json` from paying for it. Modules that reach the OS (socket, subprocess, ctypes) are
deliberately absent. A module RustPython cannot import is recorded in MISSING rather than
stopping the guest from starting: a snippet that imports it gets the ImportError itself.
"""

import importlib

MODULES = (
    "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
    "collections.abc", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib",
    "enum", "fnmatch", "fractions", "functools", "graphlib", "hashlib", "heapq", "hmac", "html",
    "io", "itertools", "json", "keyword", "math", "numbers", "operator", "pprint", "random", "re",
    "secrets", "shlex", "statistics", "string", "struct", "textwrap", "time", "types", "typing",
    "unicodedata", "urllib.parse", "uuid", "weakref", "zlib",
)

MISSING = {}

for _name in MODULES:
    try:
        importlib.import_module(_name)
    except Exception as _e:  # noqa: BLE001
        MISSING[_name] = type(_e).__name__ + ": " + str(_e)

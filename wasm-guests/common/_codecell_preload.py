"""Stdlib modules imported once, before any run: the same list for both guests.

CPython's snapshot holds what its `_codecell_app` imported at build time, from a blob frozen for
them (there is no filesystem to load others from), so everything tool code commonly uses is
imported here; its `_codecell_app` refuses to build when one fails. RustPython freezes its whole
stdlib in, so every module is importable at run time anyway; importing these when the VM is
built (at build time, pre-initialised) keeps a snippet's first `import json` from paying for it.
Modules that reach the OS (socket, subprocess, ctypes) are
deliberately absent. A module that cannot be imported is recorded in MISSING rather than stopping
the import of this module: in RustPython a snippet that imports it gets the ImportError itself.
"""

import importlib

MODULES = (
    "abc", "array", "asyncio", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
    "collections.abc", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib",
    "enum", "fnmatch", "fractions", "functools", "graphlib", "hashlib", "heapq", "hmac", "html",
    "io", "itertools", "json", "keyword", "math", "numbers", "operator", "pprint", "random", "re",
    "secrets", "shlex", "statistics", "string", "struct", "textwrap", "time", "types", "typing",
    "unicodedata", "urllib.parse", "uuid", "weakref", "zlib",
    # Pure modules tool code uses that nothing above imports (docs/async-and-fidelity.md lists
    # the stdlib modules left out, and why).
    "colorsys", "gzip", "html.parser", "logging", "pathlib", "pickle", "queue", "tomllib",
    # Loaded lazily by the stdlib, so missing at run time unless imported here: datetime.strptime
    # needs _strptime, and str.encode/bytes.decode look codecs up in encodings.* by name.
    "_strptime", "inspect", "encodings.ascii", "encodings.latin_1", "encodings.utf_8",
    "encodings.utf_16", "encodings.utf_32", "encodings.iso8859_15", "encodings.utf_8_sig", "encodings.utf_16_le", "encodings.utf_16_be",
    "encodings.utf_32_le", "encodings.utf_32_be", "encodings.cp1252", "encodings.cp437",
    "encodings.idna", "encodings.punycode", "encodings.raw_unicode_escape",
    "encodings.unicode_escape", "encodings.hex_codec", "encodings.base64_codec",
)

MISSING = {}

for _name in MODULES:
    try:
        importlib.import_module(_name)
    except Exception as _e:  # noqa: BLE001
        MISSING[_name] = type(_e).__name__ + ": " + str(_e)

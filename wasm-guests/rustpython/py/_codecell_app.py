"""codecell's RustPython guest: the Python half of the `sandbox` world's exports.

src/lib.rs imports this module once when the VM is built and calls `run_snippet(code, limit)`, `run_cell(code, limit)`,
`run_tool(source, imports, args_json, limit)` and `python_version()` from the WIT exports. The
first two are shared with the CPython guest (../../common/_codecell_exports.py); through
`_codecell_binding` they return None or a (kind, message, traceback) tuple, and (True, canonical
JSON) or (False, failure tuple). A failure is returned, never raised: an exception escaping here
is turned into a failure by the Rust side too, but with less detail.
"""

import sys

from _codecell_exports import run_cell, run_snippet, run_tool  # noqa: F401  (called from src/lib.rs)


def python_version():
    # RustPython's sys.version starts "3.14.0.alpha (...)"; report the language version as CPython does.
    return ".".join(str(part) for part in sys.version_info[:3])

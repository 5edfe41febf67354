"""codecell's CPython guest: the Python half of the `sandbox` world's exports.

c/shim.c imports this module once, when the interpreter starts (at build time: the guest is
pre-initialised), and calls `run_snippet(code, options)`, `run_cell(code, options)` and
`run_tool(source, imports, args_json, options)` for the WIT exports, with the options as a tuple
of four ints. They are the shared functions of ../../common/_codecell_exports.py; through this
guest's `_codecell_binding` they return None or a failure tuple, and (True, canonical JSON),
(False, failure tuple) or (False, the result's length).
"""

import gc

import _codecell_preload
from _codecell_exports import run_cell, run_snippet, run_tool  # noqa: F401  (called from c/shim.c)

# Only what the snapshot holds can be imported at run time: a missing module fails the build.
if _codecell_preload.MISSING:
    raise ImportError("preload failed: " + repr(_codecell_preload.MISSING))

# Snapshot an empty young generation, as the CPython guest does (../../cpython/app.py).
gc.collect()

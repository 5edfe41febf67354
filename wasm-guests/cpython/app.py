"""codecell's CPython guest: the exports of the `sandbox` world (componentize-py's entry module).

componentize-py snapshots the interpreter after this module is imported; each run happens in a
fresh instance made from that snapshot. The exports' body is shared with the RustPython guest
(../common/_codecell_exports.py); `_codecell_binding` adapts it to componentize-py.
"""

import gc
import sys

import _codecell_exports
import _codecell_preload
import wit_world

# Only what the snapshot holds can be imported at run time: a missing module fails the build.
if _codecell_preload.MISSING:
    raise ImportError("preload failed: " + repr(_codecell_preload.MISSING))


class WitWorld(wit_world.WitWorld):
    """The guest's exports."""

    # The shared functions themselves, not wrappers: a wrapper's frame would count against the
    # recursion limit under the user's code.
    run_snippet = staticmethod(_codecell_exports.run_snippet)
    run_cell = staticmethod(_codecell_exports.run_cell)
    run_tool = staticmethod(_codecell_exports.run_tool)

    def python_version(self):
        return sys.version.split()[0]


# Snapshot an empty young generation: otherwise when the first collection of a run comes (and what
# it costs in fuel) depends on how many objects the start-up happened to leave pending.
gc.collect()

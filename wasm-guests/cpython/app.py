"""codecell's CPython guest: the exports of the `sandbox` world.

Each run happens in a fresh instance made from the snapshot taken after this module was imported,
so nothing a run does survives it. Every exception is caught at the export boundary: one escaping
would trap the instance and the host would learn nothing about what went wrong.
"""

import builtins
import random
import sys

import preload  # noqa: F401  (stdlib modules must be imported before the snapshot)
import restricted
import sandbox_api
import stdio
import stub_importer
import wit_world
from componentize_py_types import Err
from failure import to_failure

CODECELL = sandbox_api.install()
stub_importer.install()
stdio.install()


def _prepare(options) -> None:
    # The snapshot fixed the generator's state at build time: every run must draw new numbers.
    random.seed()
    sys.setrecursionlimit(max(50, int(options.recursion_limit)))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _snippet_globals() -> dict:
    return {
        "__name__": "__main__",
        "__builtins__": builtins,
        "ls": CODECELL.ls,
        "read": CODECELL.read,
        "call_tool": CODECELL.call_tool,
        "ToolError": CODECELL.ToolError,
    }


class WitWorld(wit_world.WitWorld):
    """The guest's exports."""

    def run_snippet(self, code, options):
        failure = None
        try:
            _prepare(options)
            exec(compile(code, "<snippet>", "exec"), _snippet_globals())
        except SystemExit as e:
            if e.code not in (None, 0):
                failure = to_failure(e)
        except BaseException as e:
            failure = to_failure(e)
        _flush()
        if failure is not None:
            raise Err(failure)

    def run_tool(self, source, imports, args_json, options):
        try:
            _prepare(options)
            return restricted.run_tool(source, imports, args_json)
        except BaseException as e:
            failure = to_failure(e)
        raise Err(failure)

    def python_version(self):
        return sys.version.split()[0]

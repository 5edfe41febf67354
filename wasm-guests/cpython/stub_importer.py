"""Makes the tool stubs importable: `from tools.weather import forecast`.

`tools` and `tools.<category>` are packages backed by directories of the virtual tree, and
`tools.<category>.<tool>` is the stub's source read through the host. Nothing touches a filesystem.
"""

import importlib.abc
import importlib.machinery
import sys

from componentize_py_types import Err
from wit_world.imports import host


class _Loader(importlib.abc.Loader):
    def __init__(self, source):
        self._source = source

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if self._source is None:
            module.__path__ = []
            return
        code = compile(self._source, module.__spec__.origin, "exec")
        exec(code, module.__dict__)


class ToolsFinder(importlib.abc.MetaPathFinder):
    """Finds `tools`, `tools.<category>` and `tools.<category>.<tool>` in the host's tree."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[0] != "tools" or len(parts) > 3:
            return None
        if len(parts) < 3:
            directory = "/".join(parts) + "/"
            try:
                host.ls(directory)
            except Err:
                return None
            spec = importlib.machinery.ModuleSpec(fullname, _Loader(None), is_package=True)
            spec.submodule_search_locations = []
            return spec
        file = "/".join(parts) + ".py"
        try:
            source = host.read(file)
        except Err:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(source), origin=file)


def install() -> None:
    """Puts the finder first on the meta path."""
    sys.meta_path.insert(0, ToolsFinder())

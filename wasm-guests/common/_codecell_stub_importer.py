"""Makes the tool stubs importable: `from tools.weather import forecast`.

`tools` and `tools.<category>` are packages backed by directories of the virtual tree, and
`tools.<category>.<tool>` is the stub's source read through the host (`_codecell_binding`).
Nothing touches a filesystem.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

import _codecell_async
import _codecell_binding as _binding


class _Loader(importlib.abc.Loader):
    def __init__(self, source, directory=None):
        self._source = source
        self._directory = directory

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if self._source is not None:
            exec(compile(self._source, module.__spec__.origin, "exec"), module.__dict__)
            return
        module.__path__ = []
        if module.__name__.count(".") == 1:
            _export_tools(module, self._directory)


def _export_tools(package, directory):
    """Makes `from tools.<category> import <tool>` give the tool's function, not its module.

    Each stub `<tool>.py` defines a function named `<tool>`; after importing the submodule
    (which binds the module as a package attribute) the function replaces it.
    Each tool also gets an awaitable twin `<tool>_async` (unless a tool of that name exists):
    `await forecast_async(...)` is `await call_tool_async(...)` with the stub's signature.
    """
    ok, entries = _binding.ls(directory)
    if not ok:
        raise ImportError(entries)
    names = [entry[:-3] for entry in entries if entry.endswith(".py")]
    for name in names:
        submodule = importlib.import_module(package.__name__ + "." + name)
        function = getattr(submodule, name, submodule)
        setattr(package, name, function)
        twin = name + "_async"
        if callable(function) and twin not in names:
            setattr(package, twin, _codecell_async.async_twin(function, twin))


class ToolsFinder(importlib.abc.MetaPathFinder):
    """Finds `tools`, `tools.<category>` and `tools.<category>.<tool>` in the host's tree."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[0] != "tools" or len(parts) > 3:
            return None
        if len(parts) < 3:
            directory = "/".join(parts) + "/"
            ok, _ = _binding.ls(directory)
            if not ok:
                return None
            spec = importlib.machinery.ModuleSpec(fullname, _Loader(None, directory), is_package=True)
            spec.submodule_search_locations = []
            return spec
        file = "/".join(parts) + ".py"
        ok, source = _binding.read(file)
        if not ok:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(source), origin=file)


def install() -> None:
    """Puts the finder first on the meta path."""
    sys.meta_path.insert(0, ToolsFinder())

"""Marshals what the CPython guest imports into one blob for c/shim.c.

    BUILD_PYTHON freeze.py LIB COMMON PY OUT

Run by ../build.py with the native CPython of the same version as the guest's (marshal data is
version-specific). The stdlib part is the set of modules a native interpreter loads from `LIB`
when it imports everything the guest's Python (`COMMON`, `PY`) imports; `PY` and `COMMON`
themselves are added whole. In the guest, `_codecell_app` imports the same modules, and a module
this set lacks fails the guest's build (its preload check), not a run.

The blob: u32 count, then per module u32 name length, name, u8 is_package, u32 code length,
marshal data (all little-endian).
"""

import ast
import importlib
import marshal
import struct
import sys
from pathlib import Path

lib, common, py, out = (Path(a).resolve() for a in sys.argv[1:5])
ours = {p.stem: p for d in (common, py) for p in sorted(d.glob("*.py"))}

# What the guest's own modules import, at any depth, that is not one of them.
wanted = set()
for path in ours.values():
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            wanted.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            wanted.add(node.module)
wanted = {w for w in wanted if w.split(".")[0] not in ours and w != "_codecell_host"}

sys.path[:0] = [str(lib), str(common)]
sys.modules.pop("_codecell_preload", None)
importlib.import_module("_codecell_preload")
for name in sorted(wanted):
    importlib.import_module(name)

modules = {}
for name, module in list(sys.modules.items()):
    file = getattr(module, "__file__", None)
    # Aliases (`os.path` is `posixpath`) are made by the module that installs them.
    if getattr(module, "__name__", None) != name:
        continue
    if file and Path(file).resolve().is_relative_to(lib) and file.endswith(".py"):
        modules[name] = (Path(file), hasattr(module, "__path__"))
for name, path in ours.items():
    modules[name] = (path, False)

blob = bytearray(struct.pack("<I", len(modules)))
for name in sorted(modules):
    path, is_package = modules[name]
    code = compile(path.read_bytes(), f"<frozen {name}>", "exec", dont_inherit=True)
    data = marshal.dumps(code)
    encoded = name.encode()
    blob += struct.pack("<I", len(encoded)) + encoded + bytes([is_package])
    blob += struct.pack("<I", len(data)) + data
out.write_bytes(bytes(blob))
print(f"froze {len(modules)} modules, {len(blob) // 1024} KiB", file=sys.stderr)

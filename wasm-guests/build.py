#!/usr/bin/env python3
"""Builds codecell's guests into target/guests/, skipping any whose inputs are unchanged.

    python3 wasm-guests/build.py            # build what is out of date
    python3 wasm-guests/build.py --force    # rebuild anyway

The CPython guest is a componentize-py component. componentize-py is pinned below and installed
into a virtualenv under target/ by this script, so a fresh machine needs only python3 (3.10+).
Each guest is rebuilt only when the hash of its inputs (sources, WIT, tool versions, this file)
changes; the hash is kept in `<guest>.wasm.inputs`, and the output's own sha256 in
`<guest>.wasm.sha256`, which the engine uses to key its compiled-artifact cache.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

COMPONENTIZE_PY = "componentize-py==0.25.1"
ROOT = Path(__file__).resolve().parent.parent
GUESTS = ROOT / "wasm-guests"
OUT = ROOT / "target" / "guests"
VENV = ROOT / "target" / "guest-venv"


def log(msg: str) -> None:
    print(f"[build-guests] {msg}", file=sys.stderr, flush=True)


def hash_inputs(paths, extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    h.update(Path(__file__).read_bytes())
    for base in paths:
        files = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for p in files:
            h.update(str(p.relative_to(ROOT).as_posix()).encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def venv_bin(name: str) -> Path:
    scripts = VENV / ("Scripts" if os.name == "nt" else "bin")
    exe = name + (".exe" if os.name == "nt" else "")
    return scripts / exe


def ensure_componentize_py() -> Path:
    tool = venv_bin("componentize-py")
    wanted = COMPONENTIZE_PY.split("==")[1]
    if tool.exists():
        out = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
        if out.returncode == 0 and wanted in out.stdout:
            return tool
    log(f"installing {COMPONENTIZE_PY} into {VENV.relative_to(ROOT)}")
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    subprocess.run(
        [str(venv_bin("python")), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", COMPONENTIZE_PY],
        check=True,
    )
    return tool


def up_to_date(wasm: Path, digest: str) -> bool:
    stamp = wasm.with_name(wasm.name + ".inputs")
    sha = wasm.with_name(wasm.name + ".sha256")
    return wasm.exists() and sha.exists() and stamp.exists() and stamp.read_text().strip() == digest


def finish(tmp: Path, wasm: Path, digest: str) -> None:
    sha = hashlib.sha256(tmp.read_bytes()).hexdigest()
    os.replace(tmp, wasm)
    wasm.with_name(wasm.name + ".sha256").write_text(sha + "\n")
    wasm.with_name(wasm.name + ".inputs").write_text(digest + "\n")
    log(f"built {wasm.relative_to(ROOT)} ({wasm.stat().st_size // 1024} KiB, sha256 {sha[:12]})")


def build_cpython(force: bool) -> None:
    wasm = OUT / "cpython.wasm"
    digest = hash_inputs([GUESTS / "wit", GUESTS / "cpython"], COMPONENTIZE_PY)
    if not force and up_to_date(wasm, digest):
        log(f"{wasm.relative_to(ROOT)} is up to date")
        return
    tool = ensure_componentize_py()
    tmp = OUT / "cpython.wasm.tmp"
    log("componentizing the CPython guest (about a minute)")
    subprocess.run(
        [str(tool), "-d", str(GUESTS / "wit"), "-w", "sandbox", "componentize", "app",
         "-p", str(GUESTS / "cpython"), "-o", str(tmp)],
        check=True,
    )
    finish(tmp, wasm, digest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        build_cpython(args.force)
    except subprocess.CalledProcessError as e:
        log(f"failed: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

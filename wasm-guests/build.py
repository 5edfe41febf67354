#!/usr/bin/env python3
"""Builds codecell's guests into target/guests/, skipping any whose inputs are unchanged.

    python3 wasm-guests/build.py                      # build what is out of date (CPython only)
    python3 wasm-guests/build.py --force              # rebuild anyway
    python3 wasm-guests/build.py --guest rustpython   # the RustPython guest (repeatable; or `all`)

The CPython guest is a componentize-py component. componentize-py is pinned below and installed
into a virtualenv under target/ by this script, so a fresh machine needs only python3 (3.10+).
The RustPython guest is a Rust crate (wasm-guests/rustpython, its own workspace and Cargo.lock)
built with cargo for wasm32-wasip2; the target is added with rustup when missing. It is not built
by default until the engine runs it.
Each guest is rebuilt only when the hash of its inputs (sources, WIT, tool versions, this file)
changes; the hash is kept in `<guest>.wasm.inputs`, and the output's own sha256 in
`<guest>.wasm.sha256`, which the engine uses to key its compiled-artifact cache.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

COMPONENTIZE_PY = "componentize-py==0.25.1"
RUST_TARGET = "wasm32-wasip2"
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
        if base.is_file():
            files = [base]
        else:
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
    digest = hash_inputs([GUESTS / "wit", GUESTS / "common", GUESTS / "cpython"], COMPONENTIZE_PY)
    if not force and up_to_date(wasm, digest):
        log(f"{wasm.relative_to(ROOT)} is up to date")
        return
    tool = ensure_componentize_py()
    tmp = OUT / "cpython.wasm.tmp"
    log("componentizing the CPython guest (about a minute)")
    subprocess.run(
        [str(tool), "-d", str(GUESTS / "wit"), "-w", "sandbox", "componentize", "app",
         "-p", str(GUESTS / "cpython"), "-p", str(GUESTS / "common"), "-o", str(tmp)],
        check=True,
    )
    finish(tmp, wasm, digest)


def ensure_wasip2_target() -> None:
    out = subprocess.run(["rustup", "target", "list", "--installed"], capture_output=True, text=True)
    if out.returncode == 0 and RUST_TARGET in out.stdout.split():
        return
    log(f"adding the Rust target {RUST_TARGET}")
    subprocess.run(["rustup", "target", "add", RUST_TARGET], check=True)


def rustc_version() -> str:
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def build_rustpython(force: bool) -> None:
    """Builds wasm-guests/rustpython with cargo (release, locked) into target/guests/rustpython.wasm."""
    wasm = OUT / "rustpython.wasm"
    crate = GUESTS / "rustpython"
    # Cargo's own output (target/rustpython-guest) never lies under the hashed folders.
    inputs = [GUESTS / "wit", GUESTS / "common", crate / "src", crate / "py", crate / "Cargo.toml", crate / "Cargo.lock",
              crate / "build.rs", ROOT / "vendor" / "rustpython-vm", ROOT / "vendor" / "rustpython-stdlib"]
    digest = hash_inputs(inputs, rustc_version() + "\0" + RUST_TARGET)
    if not force and up_to_date(wasm, digest):
        log(f"{wasm.relative_to(ROOT)} is up to date")
        return
    ensure_wasip2_target()
    target_dir = ROOT / "target" / "rustpython-guest"
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    log("compiling the RustPython guest (a clean build: about 18 CPU-minutes, 2.4 GB of memory, 1.6 GB of disk)")
    # rustpython 0.6.0 declares rust-version 1.95 but the ruff crates it needs (held at 0.16.5
    # in Cargo.lock) declare 1.96: they build with 1.95 all the same, hence --ignore-rust-version.
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--ignore-rust-version", "--target", RUST_TARGET],
        cwd=crate, env=env, check=True,
    )
    built = target_dir / RUST_TARGET / "release" / "codecell_guest_rustpython.wasm"
    tmp = OUT / "rustpython.wasm.tmp"
    shutil.copyfile(built, tmp)
    finish(tmp, wasm, digest)


BUILDERS = {"cpython": build_cpython, "rustpython": build_rustpython}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    parser.add_argument("--guest", action="append", choices=[*BUILDERS, "all"],
                        help="the guest to build (repeatable; default: cpython)")
    args = parser.parse_args()
    guests = args.guest or ["cpython"]
    if "all" in guests:
        guests = list(BUILDERS)
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        for guest in dict.fromkeys(guests):
            BUILDERS[guest](args.force)
    except subprocess.CalledProcessError as e:
        log(f"failed: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

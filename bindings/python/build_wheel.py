#!/usr/bin/env python3
"""Builds the `codecell` wheel with both guests inside it.

    python3 bindings/python/build_wheel.py [--release] [--maturin PATH]

Copies target/guests/{cpython,rustpython}.wasm (built by `python3 wasm-guests/build.py --guest
all`) into the package and runs `maturin build`. Without --release the wheel uses the `dev`
profile, which shares the workspace's compiled (optimised) dependencies with `cargo test`;
--release is for wheels to publish. Prints the wheel's path last.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GUESTS = ("cpython", "rustpython")


def copy_guests() -> None:
    target = HERE / "python" / "codecell" / "guests"
    target.mkdir(parents=True, exist_ok=True)
    for guest in GUESTS:
        built = ROOT / "target" / "guests" / f"{guest}.wasm"
        if not built.is_file():
            sys.exit(f"{built} is missing: build the guests with `python3 wasm-guests/build.py --guest all`")
        copy = target / built.name
        if not copy.is_file() or copy.stat().st_size != built.stat().st_size or copy.read_bytes() != built.read_bytes():
            shutil.copyfile(built, copy)
        # The digest side file spares every process start hashing the guest to find its
        # compiled artifact; the engine trusts it only when it is not older than the guest,
        # so it is written after the guest (here, and when pip unpacks the wheel in name order).
        digest = hashlib.sha256(copy.read_bytes()).hexdigest()
        (target / f"{built.name}.sha256").write_text(digest + "\n")


def build(maturin: str, release: bool) -> Path:
    out = ROOT / "target" / "wheels"
    for old in out.glob("codecell-*.whl"):
        old.unlink()
    command = [maturin, "build", "--manifest-path", str(HERE / "Cargo.toml"), "--out", str(out)]
    command += ["--release", "--strip"] if release else ["--profile", "dev"]
    subprocess.run(command, check=True, cwd=HERE)
    wheels = sorted(out.glob("codecell-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="store_true", help="optimised build, for publishing")
    parser.add_argument("--maturin", default=shutil.which("maturin") or "maturin")
    args = parser.parse_args()
    if Path(args.maturin).parent != Path():
        args.maturin = str(Path(args.maturin).resolve())
    copy_guests()
    print(build(args.maturin, args.release))


if __name__ == "__main__":
    main()

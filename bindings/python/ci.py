#!/usr/bin/env python3
"""Builds the wheel, installs it into a fresh virtualenv under target/ and runs the pytest suite.

    python3 bindings/python/ci.py [PYTEST ARGS...]

Part of the README's test command. Needs the guests (`python3 wasm-guests/build.py --guest
all`); installs maturin, pytest and pydantic from PyPI into target/python/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORK = ROOT / "target" / "python"
BUILD_TOOLS = ["maturin==1.16.0"]
TEST_TOOLS = ["pytest==9.2.0", "pydantic==2.14.4"]


def bin_path(env: Path, name: str) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / (name + (".exe" if os.name == "nt" else ""))


def make_venv(env: Path, packages: list, fresh: bool) -> Path:
    if fresh and env.exists():
        shutil.rmtree(env)
    if not bin_path(env, "python").exists():
        venv.EnvBuilder(with_pip=True).create(env)
    python = bin_path(env, "python")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages], check=True)
    return python


def main() -> None:
    build_python = make_venv(WORK / "build-venv", BUILD_TOOLS, fresh=False)
    built = subprocess.run(
        [str(build_python), str(HERE / "build_wheel.py"), "--maturin", str(bin_path(WORK / "build-venv", "maturin"))],
        check=True, stdout=subprocess.PIPE, text=True,
    )
    wheel = built.stdout.strip().splitlines()[-1]
    # A fresh virtualenv each time: the suite tests the wheel as a user installs it.
    test_python = make_venv(WORK / "test-venv", [wheel, *TEST_TOOLS], fresh=True)
    env = dict(os.environ)
    # The Rust tests' cache (the engine's default beside target/guests): same guests, same
    # engine configuration, so the compiled artifacts are reused instead of compiled again.
    env.setdefault("CODECELL_CACHE_DIR", str(ROOT / "target" / "guests" / "cache"))
    # Run from the tests directory, not the source tree, so `import codecell` is the wheel's.
    done = subprocess.run([str(test_python), "-m", "pytest", "-q", str(HERE / "tests"), *sys.argv[1:]],
                          cwd=HERE / "tests", env=env)
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()

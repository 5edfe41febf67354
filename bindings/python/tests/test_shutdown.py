"""Interpreter shutdown with runs in flight never crashes (pyo3-async-runtimes' issue #40).

$CODECELL_SHUTDOWN_CYCLES interpreter lives (default 100), cycling through async runs
cancelled by asyncio.run, runs pending on a daemon thread's loop, and sync runs on daemon
threads calling Python tools, each exiting while guests still run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHILD = Path(__file__).with_name("shutdown_child.py")
MODES = ("asyncio-run", "loop-thread", "sync-threads")


def life(cycle: int) -> tuple:
    mode = MODES[cycle % len(MODES)]
    done = subprocess.run(
        [sys.executable, str(CHILD), mode, str(cycle)], capture_output=True, text=True, timeout=120
    )
    return cycle, mode, done.returncode, done.stdout, done.stderr


def test_interpreter_exit_with_runs_in_flight_never_crashes() -> None:
    cycles = int(os.environ.get("CODECELL_SHUTDOWN_CYCLES", "100"))
    with ThreadPoolExecutor(4) as pool:
        lives = list(pool.map(life, range(cycles)))
    failed = [l for l in lives if l[2] != 0 or l[3].strip() != "7"]
    assert not failed, "\n".join(
        f"cycle {c} ({m}): exit {rc}, stdout {out!r}, stderr {err[-2000:]}" for c, m, rc, out, err in failed[:5]
    )

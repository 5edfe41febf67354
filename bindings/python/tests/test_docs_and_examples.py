"""The README's example and the examples/ programs run and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


def run(path: Path) -> str:
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_example(tmp_path: Path) -> None:
    readme = (PACKAGE / "README.md").read_text()
    first = re.search(r"```python\n(.*?)```", readme, re.S)
    assert first is not None
    script = tmp_path / "readme_example.py"
    script.write_text(first.group(1))
    out = run(script)
    assert out.endswith("\n5\n\n") and "def add(a: int, b: int)" in out, out


def test_agent_loop() -> None:
    out = run(PACKAGE / "examples" / "agent_loop.py")
    assert "Paris 21\nOslo 6\nerror: no forecast for Atlantis\n" in out
    assert out.rstrip().endswith("over the next three days.")


def test_existing_tools() -> None:
    out = run(PACKAGE / "examples" / "existing_tools.py")
    assert "reminded 2 customers, 242.50 due" in out
    assert "emails sent: [{'to': 'Ada'}, {'to': 'Cy'}]" in out


def test_dynamic_tool() -> None:
    out = run(PACKAGE / "examples" / "dynamic_tool.py")
    assert "refused: dynamic tool source rejected: import_not_allowed" in out
    assert "a-tale-of-two-cities\nwasm-python\n" in out
    assert "[('project', True)]" in out

from __future__ import annotations

def execute(args):
    return 1

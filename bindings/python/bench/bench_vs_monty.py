#!/usr/bin/env python3
"""codecell vs pydantic-monty from Python, measured by one script in one run.

    python bench_vs_monty.py [--runs N]

Needs the codecell wheel and `pydantic-monty` installed in the same environment. Prints
medians (and ratios against monty measured in the same run) for:

- a fresh run of ``print(1+1)`` (codecell: a fresh guest; monty: a fresh session checked out
  of a warm worker pool, as monty's docs recommend);
- the same snippet plus one host-function call (codecell ``call_tool``, monty an
  ``external_lookup`` function);
- the cost of one call inside a run, from a snippet making 200 calls.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, List

import codecell
import pydantic_monty


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def timed(fn: Callable[[], object], runs: int) -> List[float]:
    for _ in range(max(3, runs // 10)):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def median(samples: List[float]) -> float:
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    loop200 = "for i in range(200):\n    {call}\nprint(1+1)"

    results = {}
    mode = codecell.CodeMode(tools=[codecell.tool(add)])

    def cc(code: str) -> Callable[[], object]:
        def run() -> None:
            outcome = mode.execute_code(code)
            assert outcome.ok and outcome.stdout.endswith("2\n") or outcome.stdout == "3\n", outcome
        return run

    results["codecell", "fresh"] = timed(cc("print(1+1)"), args.runs)
    results["codecell", "call"] = timed(cc("print(call_tool('main', 'add', a=1, b=2))"), args.runs)
    results["codecell", "loop0"] = timed(cc(loop200.format(call="pass")), args.runs // 2)
    results["codecell", "loop200"] = timed(cc(loop200.format(call="call_tool('main', 'add', a=i, b=2)")), args.runs // 2)

    with pydantic_monty.Monty(min_processes=1, max_processes=1) as pool:

        def mt(code: str, lookup: dict) -> Callable[[], object]:
            def run() -> None:
                out = pydantic_monty.CollectString()
                with pool.checkout() as session:
                    session.feed_run(code, external_lookup=lookup, print_callback=out)
            return run

        results["monty", "fresh"] = timed(mt("print(1+1)", {}), args.runs)
        results["monty", "call"] = timed(mt("print(add(1, 2))", {"add": add}), args.runs)
        results["monty", "loop0"] = timed(mt(loop200.format(call="pass"), {"add": add}), args.runs // 2)
        results["monty", "loop200"] = timed(mt(loop200.format(call="add(i, 2)"), {"add": add}), args.runs // 2)

    print(f"codecell {codecell.__version__} (guest cpython), pydantic-monty; {args.runs} runs each, medians in µs\n")
    print("| measurement | codecell | pydantic-monty | codecell / monty |")
    print("| --- | ---: | ---: | ---: |")
    rows = [("fresh run of `print(1+1)`", "fresh"), ("fresh run + one tool call", "call")]
    for label, key in rows:
        c, m = median(results["codecell", key]), median(results["monty", key])
        print(f"| {label} | {c:,.0f} | {m:,.0f} | {c / m:.2f} |")
    per_c = (median(results["codecell", "loop200"]) - median(results["codecell", "loop0"])) / 200
    per_m = (median(results["monty", "loop200"]) - median(results["monty", "loop0"])) / 200
    print(f"| one call inside a run (200 calls) | {per_c:,.1f} | {per_m:,.1f} | {per_c / per_m:.2f} |")


if __name__ == "__main__":
    main()

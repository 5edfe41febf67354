"""Monty's fresh-run rate, the baseline `batch_throughput` quotes codecell beside.

Each run checks a fresh session out of a warm worker pool and feeds it `print(1+1)`, the same
program codecell's figure runs. Prints the median runs/s of three rounds, one run at a time and
with two at once. Needs `pip install pydantic-monty` (the example installs it into
target/monty-venv when asked to measure Monty).
"""

import statistics
import sys
import threading
import time

import pydantic_monty


def rate(pool, runs, threads):
    def worker(n):
        for _ in range(n):
            with pool.checkout() as session:
                out = pydantic_monty.CollectString()
                session.feed_run("print(1+1)", print_callback=out)
                assert out.output == "2\n", out.output

    started = time.perf_counter()
    ts = [threading.Thread(target=worker, args=(runs // threads,)) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return runs / (time.perf_counter() - started)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with pydantic_monty.Monty(min_processes=2, max_processes=2) as pool:
        rate(pool, 100, 1)  # warm-up
        for threads in (1, 2):
            rounds = [rate(pool, runs, threads) for _ in range(3)]
            print(f"monty {threads} at a time: {statistics.median(rounds):.0f} runs/s")


if __name__ == "__main__":
    main()

"""One interpreter life for test_shutdown.py: start runs, print a marker, exit with runs in flight.

    python shutdown_child.py MODE SEED
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading

import codecell

mode_name, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)


@codecell.tool
async def nap(s: float) -> float:
    """Sleeps s seconds on the event loop."""
    await asyncio.sleep(s)
    return s


@codecell.tool
def work(n: int) -> int:
    """Python work on a worker thread, holding the GIL."""
    return sum(range(n))


mode = codecell.CodeMode(tools=[nap, work], limits=codecell.Limits(deadline_s=5))


def snippet() -> str:
    # Runs that end at scattered moments around interpreter exit.
    spin = rng.randint(0, 400_000)
    return f"call_tool('main', 'nap', s={rng.random() / 50})\nfor _ in range({spin}):\n    pass\nprint(call_tool('main', 'work', n=10000))"


async def in_flight(count: int) -> None:
    tasks = [asyncio.ensure_future(mode.execute_code_async(snippet())) for _ in range(count)]
    print((await mode.execute_code_async("print(7)")).stdout.strip(), flush=True)
    await asyncio.sleep(rng.random() / 20)
    del tasks  # asyncio.run cancels whatever is still pending


if mode_name == "asyncio-run":
    asyncio.run(in_flight(6))
elif mode_name == "loop-thread":
    # A daemon thread's loop keeps its runs pending while the main thread exits.
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    futures = [asyncio.run_coroutine_threadsafe(mode.execute_code_async(snippet()), loop) for _ in range(6)]
    print(mode.execute_code("print(7)").stdout.strip(), flush=True)
elif mode_name == "sync-threads":
    for _ in range(6):
        threading.Thread(target=mode.execute_code, args=(snippet(),), daemon=True).start()
    print(mode.execute_code("print(7)").stdout.strip(), flush=True)
else:
    sys.exit(f"unknown mode {mode_name}")

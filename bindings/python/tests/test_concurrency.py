"""Many runs at once, from threads and from asyncio, and the GIL released while a guest runs."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import codecell
from conftest import add

SNIPPET = "from tools.math import add\nprint(add({i}, 1000))"


def test_sixteen_runs_from_threads(math_mode: codecell.CodeMode) -> None:
    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(lambda i: math_mode.execute_code(SNIPPET.format(i=i)), range(16)))
    assert [o.stdout for o in outcomes] == [f"{i + 1000}\n" for i in range(16)]


def test_sixteen_runs_from_asyncio(math_mode: codecell.CodeMode) -> None:
    @codecell.tool(category="math")
    async def slow_add(a: int, b: int) -> int:
        """Adds after a pause."""
        await asyncio.sleep(0.01)
        return a + b

    mode = codecell.CodeMode(tools=[add, slow_add])

    async def main() -> list:
        return await asyncio.gather(
            *(mode.execute_code_async(f"print(call_tool('math', 'slow_add', a={i}, b=1000))") for i in range(16))
        )

    outcomes = asyncio.run(main())
    assert [o.stdout for o in outcomes] == [f"{i + 1000}\n" for i in range(16)], outcomes


def test_the_gil_is_released_while_a_guest_loops() -> None:
    mode = codecell.CodeMode(limits=codecell.Limits(deadline_s=1.0, fuel=10**13))
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    before = ticks
    outcome = mode.execute_code("while True:\n    pass")
    during = ticks - before
    stop.set()
    counter.join()
    assert outcome.limit == "deadline"
    assert during > 100, f"the counting thread ran {during} times in a 1 s guest loop"


def test_an_async_run_does_not_block_the_event_loop() -> None:
    mode = codecell.CodeMode(limits=codecell.Limits(deadline_s=0.5, fuel=10**13))

    async def main() -> int:
        ticks = 0
        run = asyncio.ensure_future(mode.execute_code_async("while True:\n    pass"))
        while not run.done():
            ticks += 1
            await asyncio.sleep(0.001)
        assert (await run).limit == "deadline"
        return ticks

    assert asyncio.run(main()) > 50


def test_cancelling_an_async_run_stops_it() -> None:
    mode = codecell.CodeMode(limits=codecell.Limits(deadline_s=30, fuel=10**13))

    async def main() -> float:
        run = asyncio.ensure_future(mode.execute_code_async("while True:\n    pass"))
        await asyncio.sleep(0.2)
        run.cancel()
        start = time.monotonic()
        try:
            await run
        except asyncio.CancelledError:
            pass
        return time.monotonic() - start

    assert asyncio.run(main()) < 1.0
    # The engine is still usable afterwards (the cancelled run freed its slot).
    assert mode.execute_code("print(1)").stdout == "1\n"

"""execute_code of print(1+1) over streamable HTTP, as the MCP Python SDK sees it, beside the
engine's own run time of the same runs (the outcome's duration_ms). Medians; one run.

    target/mcp/venv/bin/python crates/codecell-mcp/benches/http_overhead.py target/release/codecell
"""

import asyncio
import statistics
import subprocess
import sys
import time

from mcp import Client

RUNS = 200


async def measure(url):
    client_ms, engine_ms = [], []
    async with Client(url) as client:
        for i in range(RUNS + 20):
            started = time.perf_counter()
            result = await client.call_tool("execute_code", {"code": "print(1+1)"})
            elapsed = (time.perf_counter() - started) * 1e3
            assert not result.is_error, result
            if i >= 20:  # warm-up
                client_ms.append(elapsed)
                engine_ms.append(result.structured_content["duration_ms"])
    return statistics.median(client_ms), statistics.median(engine_ms)


def main():
    server = subprocess.Popen(
        [sys.argv[1], "serve", "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stderr.readline()
        url = line.strip().removeprefix("codecell: serving MCP at ")
        client, engine = asyncio.run(measure(url))
        print(
            f"execute_code print(1+1), median of {RUNS}: client-observed over HTTP {client:.2f} ms, "
            f"engine run {engine:.3f} ms ({client / engine:.1f}x; overhead {client - engine:.2f} ms)"
        )
    finally:
        server.kill()


main()

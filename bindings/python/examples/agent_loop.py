#!/usr/bin/env python3
"""An agent loop with OpenAI-style tool calls, against a stub model that replays a recorded
conversation (no network). Swap `ReplayModel` for a real client: the loop is the same.

    python agent_loop.py
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import codecell


@codecell.tool(category="weather")
def forecast(city: str, days: int = 1) -> Dict[str, Any]:
    """Daily forecast for a city.

    Args:
        city: City name, e.g. "Paris".
        days: How many days, 1 to 7.
    """
    table = {"paris": [18, 21, 17], "oslo": [4, 6, 3]}
    highs = table.get(city.lower())
    if highs is None:
        raise LookupError(f"no forecast for {city}")
    return {"city": city, "highs_c": highs[:days]}


class ReplayModel:
    """Answers with recorded assistant turns: first a code-mode tool call, then text."""

    def __init__(self) -> None:
        self.turns: List[Dict[str, Any]] = [
            {
                "role": "assistant",
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "execute_code",
                        "arguments": json.dumps({"code": (
                            "from tools.weather import forecast\n"
                            "for city in ['Paris', 'Oslo']:\n"
                            "    f = forecast(city, days=3)\n"
                            "    print(city, max(f['highs_c']))\n"
                            "try:\n"
                            "    forecast('Atlantis')\n"
                            "except ToolError as e:\n"
                            "    print('error:', e)\n"
                        )}),
                    },
                }],
            },
            {"role": "assistant", "content": "Paris peaks at 21 °C and Oslo at 6 °C over the next three days."},
        ]

    def complete(self, messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        assert tools[0]["function"]["name"] == "execute_code"
        return self.turns.pop(0)


def main() -> None:
    mode = codecell.CodeMode(tools=[forecast])
    model = ReplayModel()
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": mode.system_prompt()},
        {"role": "user", "content": "Which is warmer this week, Paris or Oslo?"},
    ]
    while True:
        reply = model.complete(messages, tools=[mode.as_openai_tool()])
        messages.append(reply)
        if not reply.get("tool_calls"):
            print("assistant:", reply["content"])
            return
        for call in reply["tool_calls"]:
            code = json.loads(call["function"]["arguments"])["code"]
            outcome = mode.execute_code(code)
            print(f"[execute_code: {outcome.status}, {len(outcome.tool_calls)} tool calls, {outcome.duration_ms:.1f} ms]")
            print(mode.render(outcome))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": mode.render(outcome)})


if __name__ == "__main__":
    main()

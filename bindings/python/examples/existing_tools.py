#!/usr/bin/env python3
"""The code-mode pattern: register an agent's existing tools (plain functions, an OpenAI
function definition, an MCP tool definition) and give the model one `execute_code` tool
instead of many, so it can chain calls in code without a round trip per call.

    python existing_tools.py
"""

from __future__ import annotations

import asyncio
from typing import List, Literal

import codecell

# 1. Plain functions (sync or async) become tools with the decorator.


@codecell.tool(category="crm")
def find_customers(country: str, tier: Literal["free", "pro"] = "pro") -> List[dict]:
    """Customers of a country and tier.

    Args:
        country: ISO country code, e.g. "FR".
        tier: Subscription tier.
    """
    rows = [
        {"id": 1, "name": "Ada", "country": "FR", "tier": "pro"},
        {"id": 2, "name": "Bo", "country": "FR", "tier": "free"},
        {"id": 3, "name": "Cy", "country": "FR", "tier": "pro"},
    ]
    return [r for r in rows if r["country"] == country and r["tier"] == tier]


@codecell.tool(category="crm")
async def invoices(customer_id: int) -> List[float]:
    """Open invoice amounts of a customer."""
    await asyncio.sleep(0.001)  # e.g. an HTTP call
    return {1: [120.0, 80.5], 3: [42.0]}.get(customer_id, [])


# 2. A tool that already has a JSON Schema: an OpenAI function definition ...
OPENAI_DEF = {
    "type": "function",
    "function": {
        "name": "send_email",
        "description": "Send an email.",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    },
}
outbox: List[dict] = []
send_email = codecell.Tool.from_openai(OPENAI_DEF, lambda to, body: outbox.append({"to": to}) or "sent", category="mail")

# ... or an MCP tool definition.
MCP_DEF = {
    "name": "word_count",
    "description": "Count the words of a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
word_count = codecell.Tool.from_mcp(MCP_DEF, lambda text: len(text.split()), category="text")

SNIPPET = """
from tools.crm import find_customers, invoices
from tools.mail import send_email
total = 0
for c in find_customers("FR"):
    due = sum(invoices(c["id"]))
    total += due
    send_email(to=c["name"], body=f"You owe {due:.2f}")
print(f"reminded {len(find_customers('FR'))} customers, {total:.2f} due")
"""


async def main() -> None:
    mode = codecell.CodeMode(
        tools=[find_customers, invoices, send_email, word_count],
        limits=codecell.Limits(deadline_s=5, max_tool_calls=100),
    )
    print(mode.ls("tools/"))
    print(mode.read("tools/crm/find_customers.py"))
    outcome = await mode.execute_code_async(SNIPPET)  # async tools run on this loop
    print(mode.render(outcome))
    print("emails sent:", outbox)


if __name__ == "__main__":
    asyncio.run(main())

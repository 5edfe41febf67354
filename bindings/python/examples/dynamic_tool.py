#!/usr/bin/env python3
"""A dynamic tool: the model writes a tool (Python with one `execute(args)`), codecell
validates it against the policy, smoke-tests it and stores it; then code mode calls it.

    python dynamic_tool.py
"""

from __future__ import annotations

import tempfile

import codecell

# What a model would send as the arguments of a `define_tool` tool call.
MODEL_SPEC = {
    "name": "slugify",
    "description": "Turn a title into a URL slug.",
    "implementation": (
        "import re\n"
        "def execute(args):\n"
        "    words = re.findall(r'[a-z0-9]+', args['title'].lower())\n"
        "    return {'slug': '-'.join(words)}\n"
    ),
    "input_schema": {
        "type": "object",
        "properties": {"title": {"type": "string", "default": "Hello World"}},
        "required": ["title"],
    },
    "output_schema": {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]},
}

# What the policy refuses: no os, no open, no dunder tricks.
BAD_SPEC = dict(MODEL_SPEC, name="peek", implementation="import os\ndef execute(args):\n    return {'slug': str(os.listdir('/'))}\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as store_dir:
        store = codecell.DynamicTools(store_dir, session="chat-42", project="blog")
        manifest = store.define(MODEL_SPEC)
        print("defined", manifest["name"], manifest["manifest_id"][:16], "imports", manifest["imports"])
        try:
            store.define(BAD_SPEC)
        except codecell.PolicyViolation as refused:
            print("refused:", refused)
        print("invoke:", store.invoke("slugify", {"title": "Code Mode, in Python!"}))

        mode = codecell.CodeMode(tools=[store.tool("slugify")])
        outcome = mode.execute_code(
            "from tools.dynamic import slugify\n"
            "for t in ['A Tale of Two Cities', 'WASM & Python']:\n"
            "    print(slugify(title=t)['slug'])\n"
        )
        print(mode.render(outcome))

        try:
            store.promote("slugify", "project")
        except codecell.ApprovalRequired:
            print("promotion needs approve=True")
        store.promote("slugify", "project", approve=True)
        print([(v["scope"], v["active"]) for v in store.versions("slugify")["versions"]])


if __name__ == "__main__":
    main()

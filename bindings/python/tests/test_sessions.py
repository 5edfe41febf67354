"""Sessions: turns that share an interpreter, their limits, and save/restore."""

from __future__ import annotations

import pytest

import codecell
from conftest import add


def test_state_persists_across_turns_and_tools_work_in_each(guest: str) -> None:
    mode = codecell.CodeMode(tools=[add], guest=guest)
    with mode.session() as session:
        assert session.execute("x = 40\ndef inc(n):\n    return n + 1").ok
        for i in range(1, 6):
            outcome = session.execute("x = inc(x)\nprint(x, call_tool('math', 'add', a=x, b=0))")
            assert outcome.stdout == f"{40 + i} {40 + i}\n", outcome
        assert session.turns == 6 and session.state == "live" and session.ended is None
    assert session.ended is not None
    with pytest.raises(codecell.EngineError, match="ended"):
        session.execute("print(x)")


def test_a_trapped_turn_ends_the_session_or_restarts_it(guest: str) -> None:
    mode = codecell.CodeMode(guest=guest, limits=codecell.Limits(fuel=200_000_000))
    ended = mode.session()
    ended.execute("x = 1")
    assert ended.execute("while True:\n    pass").limit == "fuel"
    assert ended.state == "ended" and "state is lost" in (ended.ended or "")
    restarted = mode.session(restart_on_trap=True)
    restarted.execute("x = 1")
    restarted.execute("while True:\n    pass")
    assert restarted.state == "restarted"
    assert restarted.execute("print('x' in globals())").stdout == "False\n"


def test_a_saved_session_restores_with_the_same_globals_and_an_edited_one_fails(guest: str) -> None:
    mode = codecell.CodeMode(tools=[add], guest=guest)
    session = mode.session()
    session.execute("import random\nr = random.random()")
    session.execute("print(call_tool('math', 'add', a=1, b=2))")
    before = session.execute("print(r)").stdout
    journal = session.save()
    restored = mode.restore_session(journal)
    assert restored.execute("print(r)").stdout == before
    edited = journal.replace('{"ok":"3"}', '{"ok":"4"}')
    assert edited != journal
    with pytest.raises(codecell.EngineError, match="cell 2"):
        mode.restore_session(edited)
    with pytest.raises(ValueError, match="journal"):
        mode.restore_session("{}")

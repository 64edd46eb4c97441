"""The staged start on screen: the card list first, the columns saying what is being
made ("ranking… opening the index", "ranking… building bm25"), then the rankings.

Each test drives the real load of the birds copy and holds one real step (opening
the index, or building an arm's structures) on a gate, so the intermediate screen
is a fixed state; the query is typed with real key presses. Fixed clock, 120×36,
``NO_COLOR`` unset (``conftest.hermetic``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hqltui.core import arms, session
from tests.helpers.waits import settle, until_shown
from tests.ui.conftest import SIZE

WAIT = 20.0  # seconds a held step waits for its release at most (a failed test moves on)


class Gate:
    """Holds a wrapped step until ``release()``; ``reached`` once the step was entered."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.reached = threading.Event()

    def hold(self, step: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any) -> Any:
            self.reached.set()
            self.opened.wait(WAIT)
            return step(*args)

        return held

    def release(self) -> None:
        self.opened.set()


@pytest.fixture
def bm25_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    gate = Gate()
    arm = arms.ARMS["bm25"]
    assert arm.build is not None
    monkeypatch.setitem(arms.ARMS, "bm25", replace(arm, build=gate.hold(arm.build)))
    yield gate
    gate.release()


@pytest.fixture
def index_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    gate = Gate()
    monkeypatch.setattr(session, "open_index_of", gate.hold(session.open_index_of))
    yield gate
    gate.release()


async def until(pilot, test: Callable[[], bool]) -> None:  # type: ignore[no-untyped-def]
    await until_shown(pilot, test)
    await pilot.pause()


def test_cards_shown_while_the_index_opens(snap_compare, make_app, birds: Path,
                                           index_gate: Gate) -> None:
    """The card list, header ("index opening…") and warnings; every column says so."""

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        await until(pilot, lambda: app.state.preparing == "opening the index"
                    and index_gate.reached.is_set())

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_a_query_typed_while_bm25_builds(snap_compare, make_app, birds: Path,
                                         bm25_gate: Gate) -> None:
    """The index is open (header counts, card statuses); the columns say bm25 is being
    built and the query typed meanwhile waits in the input."""

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        await until(pilot, lambda: app.state.preparing == "building bm25")
        await pilot.press(*"owls")
        await pilot.pause()

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


@pytest.mark.anyio
async def test_a_query_typed_while_preparing_is_answered_when_ready(
    make_app, birds: Path, bm25_gate: Gate
) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.state.preparing == "building bm25")
        assert app.session is not None and len(app.state.card_names()) == len(app.session.names)
        await pilot.press(*"owls")
        app.queries.timer.idle()  # the typing burst is over: its query waits for bm25
        await pilot.pause()
        assert app.answer is None  # nothing ranked yet, nothing lost
        bm25_gate.release()
        await until(pilot, lambda: app.answer is not None)
        await settle(pilot)
        assert app.state.preparing is None
        assert app.answer is not None and app.answer.query == "owls"
        assert app.answer.lexical.ok and app.answer.lexical.hits
        assert app.answer_arm == "bm25"


@pytest.mark.anyio
async def test_switching_to_an_arm_not_built_yet_says_so_then_ranks_with_it(
    make_app, birds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    arm = arms.ARMS["hashbag"]
    assert arm.build is not None
    monkeypatch.setitem(arms.ARMS, "hashbag", replace(arm, build=gate.hold(arm.build)))
    app = make_app(birds)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press(*"owls")
            await settle(pilot)
            assert app.answer is not None and app.answer_arm == "bm25"
            await pilot.press("f2")
            await until(pilot, lambda: app.state.preparing == "building hashbag")
            assert app.session is not None and not app.session.ready("hashbag")
            gate.release()
            await until(pilot, lambda: app.answer_arm == "hashbag")
            await settle(pilot)
            assert app.state.preparing is None and app.answer.lexical.ok
    finally:
        gate.release()

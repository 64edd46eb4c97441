"""``hql-tui mcp VAULT --auto-build``: the served index keeps up with the vault's edits."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from hqltui.commands.mcp import parser
from hqltui.mcp.keeper import Keeper
from hqltui.mcp.served import Served
from tests.helpers.mcp import call, server
from tests.helpers.vaults import edit_card

pytestmark = pytest.mark.anyio


def test_auto_build_is_off_unless_given() -> None:
    assert parser().parse_args(["v"]).auto_build is False
    assert parser().parse_args(["v", "--auto-build"]).auto_build is True


@pytest.mark.slow
async def test_an_edit_is_re_embedded_and_searched_fresh(birds: Path) -> None:
    async with server(birds, "--poll", "0.1", "--auto-build") as session:
        with anyio.fail_after(60):  # notifications flow within a second of the load
            while True:
                status = await call(session, "status")
                if status["reload"]["watching"] and status["reload"]["noticed_by"] == (
                        "notifications"):
                    break
                await anyio.sleep(0.05)
        assert status["reload"]["auto_build"]["state"] == "on"
        edit_card(birds, "great-cormorant")
        with anyio.fail_after(240):
            while True:
                status = await call(session, "status")
                keeper = status["reload"]["auto_build"]
                if keeper["builds"] and not keeper["pending"] and status["index"]["stale"] == 0:
                    break
                await anyio.sleep(0.1)
        assert keeper["last_build"]["state"] == "succeeded", keeper
        assert keeper["last_build"]["result"]["embedded"] == 1
        found = await call(session, "search", text="cormorant", mode="semantic")
        card = await call(session, "get_card", name="great-cormorant")
    assert "dries its wings" in card["text"] and card["index_status"] == "fresh"
    assert {h["index_status"] for h in found["arms"]["semantic"]["hits"]} == {"fresh"}


class Failed:
    """Notifications that could not start here (the OS's limit of watches, say)."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.ready.set()
        self.active = False
        self.reason = "OS file watch limit reached"


async def test_poll_0_is_refused_when_notifications_do_not_work(birds: Path) -> None:
    from hqltui.core.session import Session

    served = Served(str(birds), lambda: Session.load(birds), poll=None, keeper=Keeper(str(birds)))
    served._notify = lambda: setattr(served, "notifications", Failed())  # type: ignore[method-assign]
    served.start()
    with anyio.fail_after(60):
        await served.watch()  # returns at once: nothing will notice an edit
    assert served.watching is False
    state = served.watch_json()["auto_build"]
    assert state["state"] == "held" and state["refused"] == (
        "--poll 0 and file notifications do not work here (OS file watch limit reached): "
        "give --poll SECONDS for auto-build")

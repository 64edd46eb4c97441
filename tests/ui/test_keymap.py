"""Remapped keys: the user's keymap file, the hints that follow it, a bad file refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hqltui.ui.keys import load_keymap, show_key, user_keys
from hqltui.ui.screens.help import HelpScreen, every_table
from hqltui.ui.widgets.panes import StatusLine, WarningsStrip
from tests.helpers.vaults import write_keymap
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE

REMAP = '"jobs.build" = "ctrl+b"\n"app.warnings" = "ctrl+o"\n[app]\nlexical = "ctrl+l"\n'


def test_keys_are_written_as_the_screen_writes_them() -> None:
    assert [show_key(k) for k in ("f7", "ctrl+g", "enter", "escape", "question_mark")] == [
        "F7", "ctrl+g", "Enter", "esc", "?"]


def test_a_keymap_changes_the_hint_of_its_binding_only(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text(REMAP, encoding="utf-8")
    keys, notice = user_keys(every_table(), path)
    assert notice is None
    assert keys.hint("jobs.build") == "ctrl+b" and keys.hint("app.lexical") == "ctrl+l"
    assert keys.hint("jobs.verify") == "F8"


@pytest.mark.parametrize("text, says", [
    ("jobs.build = ", "is not valid TOML"),
    ("x = " + "[" * 600 + "]" * 600, "nests arrays or tables too deeply to be read"),
    ('"jobs.build" = "ctrl+bee"\n', "is not a key"),
    ('"jobs.build" = "f6x"\n', "is not a key"),
    ('"jobs.nope" = "ctrl+b"\n', "no binding has the id 'jobs.nope'"),
    ('"jobs.build" = 7\n', "jobs.build = 7 is not a key"),
    ('"jobs.build" = "ctrl+ b"\n', "is not a key"),
])
def test_a_bad_keymap_is_refused_whole(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text(text, encoding="utf-8")
    keymap = load_keymap(path, ["jobs.build"])
    assert keymap.keys == {}
    assert keymap.notice is not None and says in keymap.notice
    assert keymap.notice.endswith("the default keys are kept") and "\n" not in keymap.notice


def test_a_keymap_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    os.mkfifo(path)
    keymap = load_keymap(path, ["jobs.build"])
    assert keymap.keys == {}
    assert keymap.notice == (f"{path}: cannot be read: a FIFO (named pipe), not a regular "
                             "file; the default keys are kept")


def test_named_keys_textual_knows_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text('"jobs.build" = "ctrl+pageup,question_mark,slash,space,f24,B"\n',
                    encoding="utf-8")
    keymap = load_keymap(path, ["jobs.build"])
    assert keymap.notice is None and keymap.keys["jobs.build"].startswith("ctrl+pageup")


def test_one_key_given_to_two_ids_is_applied_with_a_notice_naming_both(tmp_path: Path
                                                                       ) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text('"jobs.build" = "ctrl+b"\n"jobs.verify" = "f9,ctrl+b"\n', encoding="utf-8")
    keymap = load_keymap(path, ["jobs.build", "jobs.verify"])
    assert keymap.keys == {"jobs.build": "ctrl+b", "jobs.verify": "f9,ctrl+b"}
    assert keymap.notice == (f"{path}: ctrl+b is given to jobs.build and jobs.verify; only "
                             "one of them can have it (give each its own key)")


@pytest.mark.anyio
async def test_the_ctrl_c_notice_names_the_quit_key_in_plain_text(make_app, birds: Path
                                                                   ) -> None:
    write_keymap('"app.quit" = "ctrl+w"\n')
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await settle(pilot)
        notices = [(n.title, n.message) for n in app._notifications]
        assert notices == [("Do you want to quit?", "Press ctrl+w to quit the app")]


@pytest.mark.anyio
async def test_a_remapped_key_runs_its_action_and_every_hint_follows(make_app, birds: Path
                                                                     ) -> None:
    write_keymap(REMAP)
    (birds / "hql.toml").write_text("# no index configured\n", encoding="utf-8")
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = str(app.main.query_one(StatusLine).render())
        assert "build one: press ctrl+b" in status and "F7" not in status
        await pilot.press("ctrl+l")  # the remapped app.lexical switches the arm
        await settle(pilot)
        assert app.lexical == "hashbag"
        await pilot.press("f2")  # its default key no longer does
        await settle(pilot)
        assert app.lexical == "hashbag"
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        shown = app.export_screenshot()
        assert "ctrl+b" in shown and "ctrl+l" in shown


@pytest.mark.anyio
async def test_a_bad_keymap_file_is_one_notice_and_the_defaults_stay(make_app, birds: Path
                                                                     ) -> None:
    path = write_keymap('"jobs.build" = "ctrl+b"\n"nothing.here" = "x"\n')
    (birds / "hql.toml").write_text("# no index configured\n", encoding="utf-8")
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notices = [n.message for n in app._notifications]
        assert notices == [f"{path}: no binding has the id 'nothing.here' (help lists them); "
                           "the default keys are kept"]
        assert "build one: press F7" in str(app.main.query_one(StatusLine).render())
        await pilot.press("f2")
        await settle(pilot)
        assert app.lexical == "hashbag"


def test_remapped_keys_on_screen(snap_compare, make_app, birds: Path) -> None:
    """The keymap file remaps build, warnings and the lexical switch: the header, the
    lexical column's title, the warnings strip and the footer name the new keys."""
    write_keymap(REMAP)
    (birds / "hql.toml").write_text("# no index configured\n", encoding="utf-8")

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "night hunting birds")
        assert "ctrl+o shows them" in str(pilot.app.main.query_one(WarningsStrip).border_title)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


@pytest.mark.anyio
async def test_a_keymap_and_a_history_that_are_fifos_start_the_app_with_two_notices(
        make_app, birds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keymap, history = tmp_path / "keymap.fifo", tmp_path / "history.fifo"
    os.mkfifo(keymap)
    os.mkfifo(history)
    monkeypatch.setenv("HQL_TUI_KEYMAP", str(keymap))
    monkeypatch.setenv("HQL_TUI_HISTORY", str(history))
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notices = {n.title: n.message for n in app._notifications}
        assert notices == {
            "keymap not used": f"{keymap}: cannot be read: a FIFO (named pipe), not a regular "
                               "file; the default keys are kept",
            "history not used": f"{history}: a FIFO (named pipe), not a regular file; the "
                                "query history is neither read nor saved (set "
                                "HQL_TUI_HISTORY to a file)"}
        assert app.state.session is not None and len(app.state.session.vault.cards) > 0
        await pilot.press("ctrl+q")
    assert history.is_fifo()

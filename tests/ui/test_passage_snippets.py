"""The passage that answered, where it matters: a snippet line under semantic and hybrid
rows (on by default, toggled by ``app.snippets`` / ``main.snippets``), and a stale card's
pane that says its passage is stale instead of marking a wrong span."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hqltui.ui.widgets.panes import CardDetail
from producer.embedders.local import packaged_embedder
from tests.helpers.passage_vaults import LONG, passage_vault
from tests.helpers.rendering import plain
from tests.helpers.vaults import write_keymap
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio

QUERY = "file descriptor limit"
HOSTILE_QUERY = "pwned escape"
# Card text a terminal would obey, and Rich markup, inside the answering passage.
HOSTILE = LONG.rstrip("\n") + (" Limits \x1b]0;pwned\x07 print as [bold red]markup[/bold red]"
                               "\tstays\n  text.\n")


@pytest.fixture(scope="module")
def built_shell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return passage_vault(tmp_path_factory.mktemp("snip") / "shell", packaged_embedder(),
                         [QUERY, HOSTILE_QUERY], shell=HOSTILE)


@pytest.fixture
def shell(built_shell: Path) -> Path:
    """A copy under a short relative name (the tests run in their own directory)."""
    shutil.copytree(built_shell, "shell")
    return Path("shell")


def row_lines(app, slot: str) -> list[str]:  # noqa: ANN001
    return [row.plain for row in app.main.column(slot).table.rows]


def pane_text(app) -> str:  # noqa: ANN001
    pane = app.main.query_one(CardDetail)
    shown = pane.shown
    return plain(getattr(shown, "before", shown))


async def test_a_semantic_row_shows_its_passage_on_one_safe_line(make_app, shell: Path) -> None:
    app = make_app(shell)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        hit = app.answer.semantic.hit("shell")
        assert hit is not None and hit.passage is not None and hit.passage.ordinal
        table = app.main.column("semantic").table
        assert table.row_height == 2
        first = row_lines(app, "semantic")[0]
        name, snippet = first.split("\n")
        assert name.split()[:2] == ["1", "shell"]
        width = len(name)
        assert snippet.startswith(f"    p{hit.passage.ordinal} ")
        assert len(snippet) <= width and snippet.endswith("…")  # cut to the column
        assert "file descriptors" in snippet  # from the query's first word in the passage
        assert row_lines(app, "lexical")[0].count("\n") == 0  # lexical rows stay one line
        assert app.main.column("lexical").table.row_height == 1
        assert row_lines(app, "hybrid")[0].split("\n")[1].startswith("    p")


async def test_the_snippet_quotes_escapes_and_markup_as_text(make_app, shell: Path) -> None:
    app = make_app(shell)
    async with app.run_test(size=(300, 36)) as pilot:
        await settle(pilot)
        await type_query(pilot, HOSTILE_QUERY)
        found = [r.split("\n")[1] for r in row_lines(app, "semantic") if "\n" in r
                 and "pwned" in r.split("\n")[1]]
        assert found, row_lines(app, "semantic")
        line = found[0]
        assert "\\x1b]0;pwned\\x07" in line  # the control characters written out
        assert "[bold red]markup[/bold red] stays text" in line  # whitespace collapsed


async def test_the_binding_and_its_remap_toggle_the_snippets(make_app, shell: Path) -> None:
    write_keymap('"app.snippets" = "ctrl+y"\n')
    app = make_app(shell)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        assert app.main.column("semantic").table.row_height == 2
        await pilot.press("ctrl+o")  # the default key is remapped away
        await settle(pilot)
        assert app.main.column("semantic").table.row_height == 2
        await pilot.press("ctrl+y")  # works while typing
        await settle(pilot)
        assert app.main.column("semantic").table.row_height == 1
        assert all("\n" not in r for r in row_lines(app, "semantic"))
        await pilot.press("escape", "p")  # the main screen's letter
        await settle(pilot)
        assert app.main.column("semantic").table.row_height == 2
        assert "ctrl+y" in app.keys.hint("app.snippets")


async def test_a_stale_card_says_so_and_marks_no_span(make_app, shell: Path) -> None:
    card = shell / "shell.hmd"
    card.write_text(card.read_text(encoding="utf-8").replace(
        "The common shell reads commands from the terminal.",
        "The common shell reads commands from the terminal, and a lot more words were "
        "written here since the index was built, moving every later character along."),
        encoding="utf-8")
    app = make_app(shell)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("escape", "2")
        await settle(pilot)
        assert app.selected == "shell" and app.state.statuses["shell"] == "stale"
        hit = app.answer.semantic.hit("shell")
        assert hit is not None and hit.passage is not None and hit.passage.ordinal
        pane = app.main.query_one(CardDetail)
        assert not pane.query_one(".detail-passage").display  # nothing to scroll to
        shown = pane.shown
        marked = [s for s in getattr(shown, "spans", []) if s.style == app.palette.passage]
        assert not marked
        text = pane_text(app)
        assert (f"answered by: passage {hit.passage.ordinal}, characters "
                f"{hit.passage.start}–{hit.passage.end} of the text the index was built "
                "from; stale: the card changed since, so no passage is marked") in text
        snippet = row_lines(app, "semantic")[0].split("\n")[1]
        assert snippet.startswith(f"    p{hit.passage.ordinal} stale: not quoted")


def test_snippets_on(snap_compare, make_app, shell: Path) -> None:
    """Semantic and hybrid rows with the passage that answered; the pane marks it."""

    async def run(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("escape", "2")
        await settle(pilot, rounds=5)

    assert snap_compare(make_app(shell), terminal_size=SIZE, run_before=run)


def test_snippets_off(snap_compare, make_app, shell: Path) -> None:
    """The same answer after ``ctrl+o``: one line per row again."""

    async def run(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("ctrl+o")
        await settle(pilot)

    assert snap_compare(make_app(shell), terminal_size=SIZE, run_before=run)


def test_stale_passage(snap_compare, make_app, shell: Path) -> None:
    """A stale card's passage: the row and the pane say so, nothing is marked."""
    card = shell / "shell.hmd"
    card.write_text(card.read_text(encoding="utf-8").replace("common shell", "usual shell"),
                    encoding="utf-8")

    async def run(pilot) -> None:  # noqa: ANN001
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("escape", "2")
        await settle(pilot, rounds=5)

    assert snap_compare(make_app(shell), terminal_size=SIZE, run_before=run)


async def test_a_card_without_passages_says_its_card_vector_answered(make_app,
                                                                     shell: Path) -> None:
    import sqlite3

    with sqlite3.connect(shell / ".hql/index.sqlite") as conn:
        conn.execute("DELETE FROM chunk WHERE card = 'owl'")
    app = make_app(shell)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        names = app.main.column("semantic").names
        assert names[:2] == ["shell", "owl"]
        await pilot.press("escape", "2", "down")
        await settle(pilot)
        assert app.selected == "owl"
        assert "answered by: its card vector (no passage of this card is in the index)" in \
            pane_text(app)
        owl = row_lines(app, "semantic")[1].split("\n")[1]
        assert owl.strip() == "card vector: its beginning"

"""The screens pushed over the main one: the selected card (read or edited), the
warnings, the help. Each screen's module loads when it first opens, not at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hqltui.ui import views

if TYPE_CHECKING:
    from hqltui.ui.app import HqlApp
    from producer.vault import Card


class ScreensController:
    def __init__(self, app: HqlApp) -> None:
        self.app = app

    def help(self) -> None:
        from hqltui.ui.screens.help import HelpScreen, help_tables

        app = self.app
        if not isinstance(app.screen, HelpScreen):
            groups = [(title, app.keys.bound(table)) for title, table in help_tables()]
            app.push_screen(HelpScreen(groups, views.help_notes(app.keys)))

    def open_card(self) -> None:
        from hqltui.ui.screens.card import CardScreen

        app = self.app
        if (card := self._card_or_say()) is not None:
            detail = views.card_detail(app.state, card.name, app.palette, full=True)
            app.push_screen(CardScreen(card.name, views.card_header(card, app.palette), detail))

    def edit_card(self) -> None:
        """The selected card in ``$EDITOR``; the vault is checked for changes after."""
        from hqltui.ui import editor

        app = self.app
        card = self._card_or_say()
        if card is not None and editor.edit(app, app.vault_path / card.path):
            app.sessions.check(app.state.index_file)

    def warnings(self) -> None:
        from hqltui.ui.screens.warnings import WarningsScreen

        app = self.app
        app.push_screen(WarningsScreen(views.warnings_text(app.state, app.palette, False)))

    def _card_or_say(self) -> Card | None:
        card = self.app.state.card(self.app.state.selected)
        if card is None:
            self.app.notify("select a card first", severity="warning", timeout=2)
        return card

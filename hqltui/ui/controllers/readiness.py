"""The session on screen, stage by stage: what each load message changes on screen,
and when the columns may rank.

The session controller loads in workers and posts ``SessionLoaded`` (the cards),
``SessionStage`` (a step of opening the index or building the lexical arm),
``RankingReady`` and ``SessionFailed``. This controller turns each into the screen
state and paint, asks for the lexical arm on screen to be made ready once per arm,
and keeps a query typed (or submitted) meanwhile until the columns can rank it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hqltui.ui import messages, views
from hqltui.ui.state import default_arm, loaded
from hqltui.ui.widgets.query import QueryInput

if TYPE_CHECKING:
    from hqltui.ui.app import HqlApp


class ReadinessController:
    def __init__(self, app: HqlApp) -> None:
        self.app = app
        self.arm_initialised = False  # [search] lexical taken once, then F2 or the palette
        self.submit_pending = False  # a query submitted while the session was preparing
        self.preparing_arm: str | None = None  # the lexical arm a prepare worker makes

    def loaded(self, message: messages.SessionLoaded) -> None:
        """The cards are known: draw the card list, header and warnings now; the columns
        rank once the session is ready for the lexical arm (``ranking_ready``)."""
        app = self.app
        first = app.state.session is None
        session = message.session
        from hqltui.core.labels import vault_labels  # loaded with the session (its config)

        app.state = app.related_ctl.loaded(loaded(app.state, session))
        app.state = replace(app.state, labels=vault_labels(session.config, app.state.labels))
        if not self.arm_initialised:
            self.arm_initialised = True
            app.set_reactive(type(app).lexical, default_arm(session))
            app.state = replace(app.state, lexical=app.lexical)
        history = app.sessions.history
        if first and history is not None:
            app.main.query_one(QueryInput).set_history(history.entries)
            if history.notice:
                app.notify(history.notice, title="history not used", severity="warning",
                           timeout=10)
        app.sessions.loaded(message.seen)
        self.preparing_arm = None
        app.state = replace(app.state, preparing=session.pending_step(app.lexical))
        app.paint(cards=True, columns=False)
        app.engine.check(app.state.session)
        if message.reason != "start":
            app.notify("vault reloaded", timeout=2)
            app.call_after_refresh(app.marks.ready, "reload-shown")
        app.call_after_refresh(app.marks.ready, "cards-shown")
        if self.ensure():
            self.ranking_ready()

    def stage(self, message: messages.SessionStage) -> None:
        if message.session is not self.app.state.session or message.arm != self.preparing_arm:
            return  # a session no longer on screen, an arm switched from
        self._index_opened()
        self.app.state = replace(self.app.state, preparing=message.step)
        self._paint_preparing()

    def ready(self, message: messages.RankingReady) -> None:
        if message.session is not self.app.state.session:
            return  # a session no longer on screen
        if message.arm == self.preparing_arm:
            self.preparing_arm = None
        self._index_opened()
        if self.ensure() and self.app.state.preparing is not None:
            self.ranking_ready()

    def failed(self, message: messages.SessionFailed) -> None:
        """Never rank, build or verify against a vault that is gone."""
        app = self.app
        app.state = replace(app.state, load_error=message.message, session=None)
        app.main.paint_failure(app.state, app.palette, app.keys)
        app.call_after_refresh(app.marks.ready, "vault-failed")

    def ensure(self) -> bool:
        """Can the session on screen rank with the lexical arm now? If not, have it
        made ready (once per arm) and say so in the columns."""
        app = self.app
        session = app.state.session
        if session is None:
            return False
        step = session.pending_step(app.lexical)
        if step is None:
            return True
        if self.preparing_arm != app.lexical:
            self.preparing_arm = app.lexical
            app.sessions.prepare(session, app.lexical)
            app.state = replace(app.state, preparing=step)
            self._paint_preparing()
        return False

    def _index_opened(self) -> None:
        """The header, card statuses and warnings once the index is open (they said
        "opening" until then)."""
        app = self.app
        session, summary = app.state.session, app.state.summary
        if session is None or session.index_pending or summary is None:
            return
        if summary.state == "opening":
            app.state = loaded(app.state, session)
            app.paint(cards=True, columns=False)

    def ranking_ready(self) -> None:
        """The columns can rank: answer the query typed meanwhile, or invite one."""
        app = self.app
        app.state = replace(app.state, preparing=None)
        app.related_ctl.warm(app.state)
        if app.text.strip():
            submitted, self.submit_pending = self.submit_pending, False
            app.start_query(submitted=submitted)
        else:
            empty = views.message_columns("type a query to rank the cards", app.palette.muted,
                                          "empty")
            app.main.paint_columns(empty, app.state, app.palette, app.keys)
        app.call_after_refresh(app.marks.ready, "ranking-ready")

    def _paint_preparing(self) -> None:
        app = self.app
        app.main.paint_columns(views.columns(app.state, app.palette, app.keys), app.state,
                               app.palette, app.keys)

"""Every message of the app, in one place.

Workers post these from their threads (a session loaded, an answer, an engine
answer, a job's progress); widgets and controllers post them instead of calling
into the app. The app's handlers (``hqltui.ui.app``) turn each into a new screen
state and paint it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from hqltui.core.engine import EngineAnswer, VerifyReport
    from hqltui.core.evaluation import Report
    from hqltui.core.jobs import JobEvent
    from hqltui.core.session import Answer, Session
    from hqltui.ui.state import PartialAnswer


class MainScreenReady(Message):
    """The main screen's widgets exist: paint, then load."""


class DetailPainted(Message):
    """The card pane of a new answer was drawn, after its columns (the benchmarks' marker)."""


class SessionLoaded(Message):
    """``seen``: the watch signature the load took before it read a file."""

    def __init__(self, session: Session, reason: str, seen: object = None) -> None:
        super().__init__()
        self.session = session
        self.reason = reason
        self.seen = seen


class SessionStage(Message):
    """The session on screen is being made ready to rank with lexical ``arm``: ``step``
    is what is made now ("opening the index", "counting terms", "building bm25")."""

    def __init__(self, session: Session, arm: str, step: str) -> None:
        super().__init__()
        self.session = session
        self.arm = arm
        self.step = step


class RankingReady(Message):
    """``session`` can rank with lexical ``arm`` (its structures built, the index open)."""

    def __init__(self, session: Session, arm: str) -> None:
        super().__init__()
        self.session = session
        self.arm = arm


class SessionFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class VaultChanged(Message):
    """A file of the vault (or its index) changed on disk."""


class AnswerReady(Message):
    """An answer for query ``generation``; ``partial`` while the model still loads."""

    def __init__(self, generation: int, text: str, arm: str,
                 answer: Answer | PartialAnswer | None,
                 partial: bool = False) -> None:
        super().__init__()
        self.generation = generation
        self.text = text
        self.arm = arm
        self.answer = answer
        self.partial = partial


class StatusChanged(Message):
    """Something the header shows changed (a job, the engine's counts): paint it again."""


class EngineAnswered(Message):
    """The engine's answer for query ``generation``, with the local bm25 answer it is
    compared with."""

    def __init__(self, generation: int, text: str, answer: EngineAnswer,
                 reference: Answer | None) -> None:
        super().__init__()
        self.generation = generation
        self.text = text
        self.answer = answer
        self.reference = reference


class EngineUnavailable(Message):
    """The engine cannot answer: ``refusal`` (nothing sent) or ``failure`` (its message)."""

    def __init__(self, generation: int, kind: str, message: str, fix: str | None) -> None:
        super().__init__()
        self.generation = generation
        self.kind = kind
        self.message = message
        self.fix = fix


class EngineChecked(Message):
    """An engine verify finished: its report, or the line saying why there is none."""

    def __init__(self, report: VerifyReport | None, kind: str = "", message: str = "",
                 fix: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.kind = kind
        self.message = message
        self.fix = fix


class JobUpdate(Message):
    """The newest snapshot of one job (posted from any thread)."""

    def __init__(self, event: JobEvent) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        # Textual asks the queued message whether the next one supersedes it: a
        # newer snapshot of the same job does, unless this one is the final one.
        return (
            isinstance(message, JobUpdate)
            and message.event.job_id == self.event.job_id
            and not self.event.finished
        )


class LabelsScored(Message):
    """Every labelled query scored on the session on screen (``eval``'s report)."""

    def __init__(self, report: Report, lexical: str) -> None:
        super().__init__()
        self.report = report
        self.lexical = lexical


class TuneProgress(Message):
    """``tune`` scored ``done`` of ``total`` configurations (a newer one replaces it)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TuneProgress)


class TuneDone(Message):
    """``tune`` finished (or was cancelled): its result, best first."""

    def __init__(self, result: object) -> None:
        super().__init__()
        self.result = result


EngineMessage = EngineAnswered | EngineUnavailable | EngineChecked

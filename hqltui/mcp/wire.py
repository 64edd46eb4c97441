"""The stdio wire: one JSON-RPC message a line on the process's stdin and stdout.

Our own rather than the SDK's ``stdio_server``, for three reasons an adversarial client
showed: the SDK validates a line before anyone sees it, so a request whose ``id`` is
``1.5`` reaches the server as a notification, its id gone, and is never answered
(``hqltui.mcp.unreadable`` reads the line itself); it reads and writes on anyio worker
threads, which the interpreter waits for at exit, so after Ctrl-C a read blocked on an
idle stdin kept the server alive until the client closed it; and a client that closed
its end of stdout ended the server with an ``ExceptionGroup``. Here the blocking reads
and writes run on daemon threads, ``stop()`` ends the reading as end of input does (the
SDK then answers what is in flight, ``Connection closed``), and a broken stdout stops
the server with a sentence saying so.

While it serves, fd 0 reads the null device and fd 1 writes to stderr (as the SDK's
transport does), so a child process or a stray print never touches the protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import BinaryIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from hqltui.mcp.daemon import on_daemon_thread
from hqltui.mcp.unreadable import read_line

DRAIN_SECONDS = 2.0  # how long answers already made may take to reach a client at exit


def write_all(fd: int, data: bytes) -> None:
    """Every byte, however many writes the pipe takes (no buffer is left to flush at exit)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, int]]:
    """The wire's own stdin (buffered lines) and stdout (a descriptor); fds 0 and 1 point
    elsewhere meanwhile."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.close(quiet)
    os.dup2(2, 1)
    try:
        # never closed: a daemon thread may still block on them after the wire ends
        yield os.fdopen(wire_in, "rb", closefd=False), wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


class Wire:
    """The server's two streams over a pair of byte pipes; ``stopped`` says why it ended
    early (a signal, a closed stdout), None when the client ended its input."""

    def __init__(self, lines_in: BinaryIO, lines_out: int) -> None:
        self._in = lines_in
        self._out = lines_out
        inbound_send, self.read_stream = anyio.create_memory_object_stream[SessionMessage](0)
        self.write_stream, outbound = anyio.create_memory_object_stream[SessionMessage](0)
        self._inbound_send: MemoryObjectSendStream[SessionMessage] = inbound_send
        self._answers = self.write_stream.clone()  # the reader's own answers to bad lines
        self._outbound: MemoryObjectReceiveStream[SessionMessage] = outbound
        self._reading = anyio.CancelScope()
        self._written = anyio.Event()
        self.stopped: str | None = None
        self.signal: int | None = None

    def stop(self, why: str, signal: int | None = None) -> None:
        """Read no more, and say why (and which signal asked): the server sees the end of
        its input and winds down."""
        if self.stopped is None:
            self.stopped, self.signal = why, signal
        self.end_input()

    def end_input(self) -> None:
        self._reading.cancel()

    async def read(self) -> None:
        with self._reading, suppress(anyio.BrokenResourceError):  # the server has ended
            async with self._inbound_send, self._answers:
                while True:
                    raw = await on_daemon_thread(self._in.readline)
                    if not raw:
                        return
                    read = read_line(raw.decode("utf-8", errors="replace"))
                    if isinstance(read, SessionMessage):
                        await self._inbound_send.send(read)
                    elif read is not None:
                        await self._answers.send(SessionMessage(read))

    async def write(self) -> None:
        try:
            async with self._outbound:
                async for item in self._outbound:
                    text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await on_daemon_thread(write_all, self._out, (text + "\n").encode())
                    except OSError as exc:
                        self.stop(f"the client closed its end of stdout ({exc.strerror or exc}): "
                                  "answers cannot reach it, so the server stopped")
                        return
        finally:
            self._written.set()

    async def drain(self) -> None:
        """Wait (a while) for the answers already made to be written."""
        with anyio.move_on_after(DRAIN_SECONDS):
            await self._written.wait()


@asynccontextmanager
async def stdio_wire() -> AsyncIterator[Wire]:
    with claimed_stdio() as (lines_in, lines_out):
        wire = Wire(lines_in, lines_out)
        async with anyio.create_task_group() as group:
            group.start_soon(wire.read)
            group.start_soon(wire.write)
            try:
                yield wire
            finally:
                wire.end_input()
                await wire.drain()
                group.cancel_scope.cancel()

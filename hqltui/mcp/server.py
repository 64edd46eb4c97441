"""`hql-tui mcp VAULT`: the core's tools over the Model Context Protocol (stdio).

The official SDK's low-level ``Server`` carries the protocol; each tool is a
function of ``hqltui.core.agent``. While serving, the SDK points fd 1 at stderr,
so only protocol messages reach stdout. A refusal is a tool result marked as an
error whose text is ``producer.wording.with_fix``'s one line; no exception
escapes a call (no traceback reaches the client).

The vault is loaded once and reloaded when its files change (``hqltui.mcp.served``).
"""

from __future__ import annotations

import json
import signal
import threading
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

from hqltui.core import agent
from hqltui.core.agent import Refused
from hqltui.mcp import related_tool
from hqltui.mcp.served import Served
from hqltui.mcp.wire import Wire, stdio_wire
from producer.terminal import shown
from producer.wording import with_fix

NAME = "hql-tui"


# ------------------------------------------------------------------------ tools

LIMIT = {"type": "integer", "minimum": 1, "maximum": agent.MAX_LIMIT,
         "description": f"hits per arm (1..{agent.MAX_LIMIT}); default the vault's "
                        "[search] limit"}


def tools(allow_build: bool) -> list[types.Tool]:
    listed = [
        types.Tool(
            name="search",
            description=(
                "Rank the vault's cards for a query, by each retrieval arm, exactly as "
                "`hql-tui query --json`: per arm its hits (name, title, path, score, rank, "
                "index_status: fresh, stale (changed since the build) or missing, "
                "and for hybrid each fused arm's rank and score; a snippet of at most "
                f"{agent.SNIPPET_CHARS} characters around the longest query word found, in the "
                "passage that answered where one did), its "
                "retrieval provenance (model, revision, metric, query vector source; fusion "
                "and windows for hybrid), warnings (stale/absent cards: the index is behind) "
                "and refusals. Lexical arms match words; semantic matches meaning from the "
                "embedding index; hybrid fuses the two. A semantic answer never falls back "
                "to lexical: a refused arm says why and how to fix it."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "description": "the query"},
                    "mode": {"type": "string", "enum": list(agent.SEARCH_MODES),
                             "default": agent.DEFAULT_MODE,
                             "description": "which ranking: an arm, `lexical` for the "
                                            "configured lexical arm, `hybrid`, or `all`"},
                    "limit": LIMIT,
                },
                "required": ["text"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="get_card",
            description=(
                "One card by name: title, vault-relative path, its text (at most "
                f"{agent.TEXT_CHARS:,} characters; `truncated` says when cut), the cards it "
                "links to, the cards linking to it, links to no card, and its status in the "
                "semantic index (fresh, stale: changed since the build, missing)."
            ),
            input_schema={
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1,
                                        "description": "the card's name (a search hit's `name`)"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="status",
            description=(
                "The vault and its semantic index: the index setting (as `hql-tui VAULT "
                "--list` prints it), counts of fresh, stale, missing and orphan cards with "
                f"up to {agent.STATUS_NAMES} names each, model, revision and build time, the "
                "vault's warnings, and the engine's indexes (one short call) when [engine] "
                "is set. Call it to know whether semantic scores describe the current text."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
        types.Tool(
            name="verify",
            description=(
                "Check the semantic index against the vault (`hql-semantics verify --json`): "
                "clean, or every problem (stale, absent, orphan cards, bad vectors, schema)."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
        types.Tool(name="related", description=related_tool.DESCRIPTION,
                   input_schema=related_tool.SCHEMA),
    ]
    if allow_build:
        listed.append(types.Tool(
            name="build",
            description=(
                "Build or update the semantic index with `hql-semantics build` (only cards "
                "whose text changed are embedded), reporting progress; the vault is reloaded "
                "when it succeeds. Cancelling the request stops the build and leaves the "
                "previous index untouched."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ))
    return listed


def result(payload: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, indent=1)
    return types.CallToolResult(content=[types.TextContent(text=text)],
                                structured_content=payload)


def refused(message: str, fix: str | None) -> types.CallToolResult:
    """The one refusal shape: an error result whose text is the message and its fix."""
    return types.CallToolResult(content=[types.TextContent(text=with_fix(message, fix))],
                                structured_content={"error": {"message": message, "fix": fix}},
                                is_error=True)


def refuse_unknown_arguments(tool: types.Tool, args: dict[str, Any]) -> None:
    """The schemas say ``additionalProperties: false``, and the SDK does not check it: a
    misspelt argument (``limt``) is refused rather than silently ignored."""
    known = tool.input_schema["properties"]
    unknown = [key for key in args if key not in known]
    if unknown:
        named = ", ".join(f"`{shown(key)}`" for key in unknown)  # one line, whatever the key
        fix = ("give only " + ", ".join(f"`{key}`" for key in known) if known
               else "call it with no arguments")
        raise Refused(f"{tool.name}: unknown argument{'s' if len(unknown) > 1 else ''} {named}",
                      fix)


@dataclass
class Tools:
    served: Served
    allow_build: bool = False
    live: bool = False  # --allow-remote-embedding

    async def call(self, ctx: Any, name: str, args: dict[str, Any]) -> types.CallToolResult:
        try:
            listed = {tool.name: tool for tool in tools(self.allow_build)}
            if name == "build" and not self.allow_build:
                raise Refused("the build tool is off: this server is read-only",
                              "start it with `hql-tui mcp VAULT --allow-build`")
            if name not in listed:
                raise Refused(f"no tool is named `{name}`", "call one of " + ", ".join(listed))
            refuse_unknown_arguments(listed[name], args)
            if name == "build":
                return result(await self._build(ctx))
            handler = getattr(self, f"_{name}")
            session = await self.served.current()
            return result(await anyio.to_thread.run_sync(handler, session, args))
        except Refused as exc:
            return refused(exc.message, exc.fix)
        except (TypeError, ValueError, KeyError) as exc:
            return refused(f"{name}: bad arguments: {type(exc).__name__}: {exc}",
                           "see the tool's input schema")
        except Exception as exc:  # noqa: BLE001 - no traceback reaches the client
            return refused(f"{name} failed: {type(exc).__name__}: {exc}", None)

    def _search(self, session: Any, args: dict[str, Any]) -> dict[str, Any]:
        limit = args.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise Refused(f"limit `{limit}` is not a whole number",
                          f"give a limit from 1 to {agent.MAX_LIMIT}")
        text = args.get("text")
        if not isinstance(text, str):
            raise Refused("the query text is missing", "give `text`, the query")
        return agent.search(session, self.served.root, text,
                            str(args.get("mode", agent.DEFAULT_MODE)), limit, live=self.live)

    def _related(self, session: Any, args: dict[str, Any]) -> dict[str, Any]:
        return related_tool.related(session, args)

    def _get_card(self, session: Any, args: dict[str, Any]) -> dict[str, Any]:
        return agent.get_card(session, str(args.get("name", "")))

    def _status(self, session: Any, args: dict[str, Any]) -> dict[str, Any]:
        from hqltui.core.index_setting import index_line

        out = agent.status(session, index_line(self.served.root, session.config),
                           agent.engine_status(session))
        out["reload"] = self.served.watch_json()
        return out

    def _verify(self, session: Any, args: dict[str, Any]) -> dict[str, Any]:
        return agent.verify(session)

    async def _build(self, ctx: Any) -> dict[str, Any]:
        from hqltui.core.jobs import index_build_job

        session = await self.served.current()
        out = session.config.index_path
        if out is None:
            raise Refused("no index is configured to build",
                          'add `[semantics] index = ".hql/index.sqlite"` to hql.toml')
        job = index_build_job(self.served.root, out)
        ended = threading.Event()
        last: list[tuple[int | None, int | None, str]] = []

        def emit(event: Any) -> None:  # on the job's thread
            seen = (event.done, event.total, event.message)
            if last and last[-1] == seen:
                return
            last.append(seen)
            try:
                anyio.from_thread.run(ctx.session.report_progress, float(event.done or 0),
                                      None if event.total is None else float(event.total),
                                      event.message or event.state)
            except Exception:  # noqa: BLE001, S110 - a lost progress note never stops a build
                pass

        gate = threading.Lock()  # the thread starts the job, or learns it was cancelled first
        started = [False]

        def run() -> Any:
            with gate:
                if job.cancel_requested.is_set():
                    return None  # cancelled before this thread ran: no producer is started
                started[0] = True
            try:
                return job.run(emit)
            finally:
                ended.set()

        try:
            final = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with gate:
                job.cancel()  # SIGINT to the producer: it stops, the old index stays
                running = started[0]
            if running:  # else the thread never ran (or never will run) the job
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(ended.wait)
            raise
        if final.state != "succeeded":
            raise Refused(f"the build {final.state}: {final.message}",
                          "see the build's log: " + " | ".join(final.log[-3:]) if final.log
                          else None)
        await anyio.to_thread.run_sync(self.served.reload)
        return {"state": final.state, "message": final.message, "result": final.result,
                "index": agent.index_status(self.served.session)}


def build_server(served: Served, *, allow_build: bool, live: bool) -> Server[Any]:
    calls = Tools(served, allow_build=allow_build, live=live)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools(allow_build))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await calls.call(ctx, params.name, dict(params.arguments or {}))

    return Server(NAME, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Search a vault of HyperMarkDown cards: lexical, semantic and "
                               "hybrid rankings side by side, with provenance and index "
                               "warnings. Call `status` to see whether the index is current.")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hql-tui")
    except PackageNotFoundError:
        return "0"


async def serve(served: Served, *, allow_build: bool, live: bool) -> Wire:
    """Serve until the client ends its input, a signal asks to stop or stdout is closed;
    the wire says which (``stopped``, ``signal``)."""
    server = build_server(served, allow_build=allow_build, live=live)
    async with stdio_wire() as wire, anyio.create_task_group() as group:
        group.start_soon(served.watch)
        group.start_soon(stop_on_signals, wire, group.cancel_scope)
        await server.run(wire.read_stream, wire.write_stream,
                         server.create_initialization_options())
        group.cancel_scope.cancel()
    return wire


async def stop_on_signals(wire: Wire, everything: anyio.CancelScope) -> None:
    """SIGINT or SIGTERM ends the input: what is in flight is cancelled (a build's
    producer interrupted, its index untouched) and answered, then the server exits. A
    second signal cancels every request at once (a build still waits for its producer
    to clean up)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if wire.stopped is not None:
                everything.cancel()
                return
            name = signal.Signals(signum).name
            wire.stop(f"stopped by {name}: requests in flight were cancelled and answered "
                      "`Connection closed`", signum)

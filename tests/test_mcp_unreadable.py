"""`hql-tui mcp` answers every line that may be a request, even one it cannot read, and no
line stops it: a client that sent a request is never left waiting on its id (JSON-RPC
2.0: -32700, -32600), a notification is never answered. Raw lines on the real server's
stdin, as a broken or hostile client would send them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mcp_raw import RawServer, initialized

SEARCH = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
          "params": {"name": "search", "arguments": {"text": "owl", "mode": "bm25", "limit": 1}}}
INVALID_ID = "Invalid request: `id` must be a string or an integer"


def error_of(answer: dict) -> tuple[object, int, str]:
    return answer["id"], answer["error"]["code"], answer["error"]["message"]


def test_every_unreadable_line_is_answered_and_the_server_goes_on(tmp_path: Path) -> None:
    with initialized(RawServer(tmp_path)) as server:
        surrogate = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
                     '{"name": "search", "arguments": {"text": "\\ud800"}}}')
        answers = [server.ask("{not json"), server.ask(surrogate),
                   server.ask('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": 5}'),
                   server.ask("[1, 2]")]
        assert [(a["id"], a["error"]["code"]) for a in answers] == [
            (None, -32700), (7, -32600), (8, -32600), (None, -32600)]
        assert answers[0]["error"]["message"] == "Parse error: the line is not JSON"
        assert answers[1]["error"]["message"].startswith(
            "Invalid request: the message is not valid Unicode (a lone surrogate escape?)")
        found = server.ask(json.dumps(SEARCH))  # the server still answers
        assert found["id"] == 9 and not found["result"]["isError"]


def test_deep_nesting_is_answered_as_too_deep_and_the_server_lives_on(tmp_path: Path) -> None:
    def request(depth: int) -> str:
        params = '{"a":' * depth + "1" + "}" * depth
        return '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": ' + params + "}"

    with initialized(RawServer(tmp_path)) as server:
        deepest = "[" * 1000 + "]" * 1000  # 2 KB: once a RecursionError that ended the server
        assert error_of(server.ask(deepest)) == (
            None, -32600, "Invalid request: the message is nested too deeply")
        assert error_of(server.ask(request(1000))) == (
            None, -32600, "Invalid request: the message is nested too deeply")
        rid, code, message = error_of(server.ask(request(300)))  # Python reads the id here
        assert (rid, code) == (3, -32600)
        assert message.startswith("Invalid request: the message is nested too deeply (")
        assert server.ask(request(100)) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        found = server.ask(json.dumps(SEARCH))
        assert found["id"] == 9 and not found["result"]["isError"]


def test_an_id_that_is_no_string_or_integer_is_answered_with_a_null_id(tmp_path: Path) -> None:
    with initialized(RawServer(tmp_path)) as server:
        for odd in (1.5, True, None, {"n": 1}, [1]):
            line = json.dumps({"jsonrpc": "2.0", "id": odd, "method": "ping"})
            assert error_of(server.ask(line)) == (None, -32600, INVALID_ID), odd
        assert server.ask('{"jsonrpc": "2.0", "id": "s", "method": 5}')["id"] == "s"
        assert server.ask('{"jsonrpc": "2.0", "id": 4, "method": "ping"}') == {
            "jsonrpc": "2.0", "id": 4, "result": {}}


def test_a_message_without_id_is_never_answered_however_invalid(tmp_path: Path) -> None:
    with initialized(RawServer(tmp_path)) as server:
        server.send('{"jsonrpc": "2.0", "method": "tools/call", "params": 5}')
        server.send('{"jsonrpc": "2.0", "method": "notifications/nothing-we-know"}')
        server.send('{"method": 5}')
        # the next line out answers the next request: nothing was sent for those three
        assert server.ask('{"jsonrpc": "2.0", "id": 5, "method": "ping"}')["id"] == 5


@pytest.mark.parametrize(("line", "answer"), [
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', (None, -32600)),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', (None, -32600)),
    ('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', (None, -32600)),
    ('{"jsonrpc": "2.0", "id": "é", "method": "tools/call", "params": 5}', ("é", -32600)),
    ('{"jsonrpc": "1.0", "id": 4, "method": "ping"}', (4, -32600)),
    ('{"id": 4}', (4, -32600)),
    ('"ping"', (None, -32600)),
    ("", (None, -32700)),
    ('{"jsonrpc": "2.0", "method": "ping", "params": 5}', "unanswered"),
    ('{"jsonrpc": "2.0", "method": "notifications/initialized"}', "passed on"),
    ('{"jsonrpc": "2.0", "id": "a", "method": "ping"}', "passed on"),
], ids=["float id", "null id", "surrogate id", "unicode id", "jsonrpc 1.0", "no method",
        "a string", "blank", "invalid notification", "notification", "request"])
def test_the_id_rule_line_by_line(line: str, answer: object) -> None:
    from mcp.shared.message import SessionMessage

    from hqltui.mcp.unreadable import read_line

    read = read_line(line)
    if answer == "passed on":
        assert isinstance(read, SessionMessage)
    elif answer == "unanswered":
        assert read is None
    else:
        assert read is not None and not isinstance(read, SessionMessage)
        assert (read.id, read.error.code) == answer
        json.loads(read.model_dump_json())  # writable: no lone surrogate echoed

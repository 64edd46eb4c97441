"""Recognise the query shape the engine serves from a vector index.

The engine's optimizer rewrites ``SELECT ... FROM t ORDER BY <dist>(col, ARRAY[...]) LIMIT k``
into an HNSW lookup only when the shape is exactly right; every other shape is answered by a
full scan with the same rows.  This module finds each ``SELECT`` block of a statement and
decides, block by block, whether it has that shape.  It works on tokens rather than on a full
SQL grammar: the rule it mirrors matches a narrow plan pattern (a sort with a fetch, directly
over a projection, directly over a table scan or a filtered table scan), and a narrow text
pattern is enough to recognise it.

Decisions mirror the engine rule:

* the ``FROM`` clause is one table reference (no join, no subquery), optional alias;
* no ``GROUP BY``/``HAVING``/``DISTINCT``/``OFFSET`` (they put another node between the
  sort and the projection);
* some ``ORDER BY`` key is a distance call ``fn(column, ARRAY[...])`` -- directly or through a
  select-list alias -- and the first such key is ascending (other keys may follow);
* a literal ``LIMIT`` is present;
* the vector column itself is not in the select list (``*`` counts as projecting it);
* a ``WHERE`` clause is allowed and makes the lookup "filtered".

Whether an index exists for the table *as written* and for the matching metric is decided by
the caller, which knows the indexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DISTANCE_FUNCTIONS = {
    "cosine_distance": "cosine",
    "l2_distance": "l2",
    "negative_dot_product": "dot",
}

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<str>'(?:[^']|'')*')
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>::|<=|>=|<>|!=|\|\||.)
    """,
    re.VERBOSE | re.DOTALL,
)

_CLAUSE_WORDS = {
    "from",
    "where",
    "group",
    "having",
    "order",
    "limit",
    "offset",
    "window",
    "qualify",
    "fetch",
}
_SET_OPERATORS = {"union", "intersect", "except"}
_NOT_ALIASES = _CLAUSE_WORDS | _SET_OPERATORS | {"as", "asc", "desc", "nulls", "and", "or"}


@dataclass(frozen=True)
class Token:
    kind: str  # str | qident | num | ident | punct
    text: str
    start: int
    end: int
    depth: int  # bracket depth before this token

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "ident" else ""


def tokenize(sql: str) -> list[Token]:
    tokens: list[Token] = []
    depth = 0
    for m in _TOKEN_RE.finditer(sql):
        kind = m.lastgroup or "punct"
        if kind in ("ws", "comment"):
            continue
        text = m.group()
        if text in (")", "]"):
            depth -= 1
        tokens.append(Token(kind, text, m.start(), m.end(), depth))
        if text in ("(", "["):
            depth += 1
    return tokens


def normalize_identifier(token: Token) -> str:
    """An unquoted identifier is folded to lower case; a quoted one keeps its case."""
    if token.kind == "qident":
        return token.text[1:-1].replace('""', '"')
    return token.text.lower()


@dataclass
class VectorShape:
    """One ``SELECT`` block that has the index-served shape (apart from the index lookup)."""

    table_parts: tuple[str, ...]  # as written, normalised
    table_span: tuple[int, int]  # character span of the reference in the SQL text
    column: str
    function: str
    metric: str
    query_vector: list[float]
    k: int
    filtered: bool


@dataclass
class ShapeReport:
    shapes: list[VectorShape] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)  # why a distance-ordered block is a scan


def _split_top(tokens: list[Token], depth: int) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    for tok in tokens:
        if tok.text == "," and tok.depth == depth:
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def _select_blocks(tokens: list[Token]) -> list[list[Token]]:
    blocks = []
    for i, tok in enumerate(tokens):
        if tok.word != "select":
            continue
        depth = tok.depth
        j = i + 1
        while j < len(tokens):
            t = tokens[j]
            if t.depth < depth:
                break
            if t.depth == depth and (t.text == ";" or t.word in _SET_OPERATORS):
                break
            j += 1
        blocks.append(tokens[i:j])
    return blocks


def _clauses(block: list[Token]) -> dict[str, list[Token]] | None:
    depth = block[0].depth
    clauses: dict[str, list[Token]] = {"select": []}
    current = "select"
    i = 1
    while i < len(block):
        tok = block[i]
        word = tok.word if tok.depth == depth else ""
        if word in _CLAUSE_WORDS:
            current = word
            if current in clauses:
                return None
            clauses[current] = []
            if word in ("group", "order") and i + 1 < len(block) and block[i + 1].word == "by":
                i += 1
        else:
            clauses[current].append(tok)
        i += 1
    return clauses


def _table_ref(tokens: list[Token]) -> tuple[tuple[str, ...], tuple[int, int], str | None] | None:
    """``a[.b[.c]] [[AS] alias]`` and nothing else."""
    parts: list[str] = []
    i = 0
    while True:
        if i >= len(tokens) or tokens[i].kind not in ("ident", "qident"):
            return None
        parts.append(normalize_identifier(tokens[i]))
        i += 1
        if i < len(tokens) and tokens[i].text == ".":
            i += 1
            continue
        break
    if len(parts) > 3:
        return None
    span = (tokens[0].start, tokens[i - 1].end)
    rest = tokens[i:]
    alias = None
    if rest and rest[0].word == "as":
        rest = rest[1:]
    if rest:
        if len(rest) != 1 or rest[0].kind not in ("ident", "qident"):
            return None
        if rest[0].word in ("join", "inner", "left", "right", "full", "cross", "natural"):
            return None
        alias = normalize_identifier(rest[0])
    return tuple(parts), span, alias


def _column_ref(tokens: list[Token]) -> str | None:
    """The column name of ``[qualifier.]column``, or None."""
    if not tokens or len(tokens) % 2 == 0:
        return None
    for i, tok in enumerate(tokens):
        if i % 2 == 0 and tok.kind not in ("ident", "qident"):
            return None
        if i % 2 == 1 and tok.text != ".":
            return None
    return normalize_identifier(tokens[-1])


def _number_list(tokens: list[Token]) -> list[float] | None:
    values = []
    for item in _split_top(tokens, tokens[0].depth if tokens else 0):
        sign = 1.0
        if item and item[0].text in ("-", "+"):
            sign = -1.0 if item[0].text == "-" else 1.0
            item = item[1:]
        if len(item) != 1 or item[0].kind != "num":
            return None
        values.append(sign * float(item[0].text))
    return values or None


def _distance_call(tokens: list[Token]) -> tuple[str, str, list[float]] | None:
    """``fn(column, ARRAY[n, ...])`` or ``fn(column, make_array(n, ...))``."""
    if len(tokens) < 4 or tokens[0].word not in DISTANCE_FUNCTIONS:
        return None
    if tokens[1].text != "(" or tokens[-1].text != ")":
        return None
    inner = tokens[2:-1]
    args = _split_top(inner, tokens[1].depth + 1)
    if len(args) != 2:
        return None
    column = _column_ref(args[0])
    if column is None:
        return None
    vec = args[1]
    if len(vec) >= 3 and vec[0].word == "array" and vec[1].text == "[" and vec[-1].text == "]":
        numbers = _number_list(vec[2:-1])
    elif len(vec) >= 3 and vec[0].word == "make_array" and vec[1].text == "(":
        numbers = _number_list(vec[2:-1]) if vec[-1].text == ")" else None
    else:
        numbers = None
    if numbers is None:
        return None
    return tokens[0].word, column, numbers


def _strip_alias(item: list[Token]) -> tuple[list[Token], str | None]:
    if len(item) >= 3 and item[-2].word == "as" and item[-1].kind in ("ident", "qident"):
        return item[:-2], normalize_identifier(item[-1])
    if (
        len(item) >= 2
        and item[-1].kind in ("ident", "qident")
        and item[-1].word not in _NOT_ALIASES
        and item[-2].text not in (".",)
        and (item[-2].kind in ("ident", "qident", "num", "str") or item[-2].text in (")", "]"))
    ):
        return item[:-1], normalize_identifier(item[-1])
    return item, None


def analyse(sql: str) -> ShapeReport:
    report = ShapeReport()
    tokens = tokenize(sql)
    for block in _select_blocks(tokens):
        clauses = _clauses(block)
        if clauses is None or "order" not in clauses:
            continue
        depth = block[0].depth
        items = [_strip_alias(it) for it in _split_top(clauses["select"], depth)]
        aliases = {alias: expr for expr, alias in items if alias}
        keys = _split_top(clauses["order"], depth)
        found = None
        for key in keys:
            descending = False
            while key and key[-1].word in ("asc", "desc", "first", "last", "nulls"):
                if key[-1].word == "desc":
                    descending = True
                key = key[:-1]
            call = _distance_call(key)
            if call is None and len(key) == 1 and key[0].kind in ("ident", "qident"):
                target = aliases.get(normalize_identifier(key[0]))
                call = _distance_call(target) if target else None
            if call is not None:
                found = (call, descending)
                break
        if found is None:
            continue
        (function, column, vector), descending = found
        reason = None
        if descending:
            reason = "distance ordered descending"
        elif "limit" not in clauses:
            reason = "no LIMIT"
        elif "offset" in clauses or "fetch" in clauses:
            reason = "OFFSET/FETCH present"
        elif any(c in clauses for c in ("group", "having", "window", "qualify")):
            reason = "aggregation or window clause"
        elif clauses["select"] and clauses["select"][0].word == "distinct":
            reason = "DISTINCT"
        elif "from" not in clauses:
            reason = "no FROM"
        limit = clauses.get("limit", [])
        if reason is None and (len(limit) != 1 or limit[0].kind != "num" or "." in limit[0].text):
            reason = "LIMIT is not an integer literal"
        ref = _table_ref(clauses["from"]) if reason is None else None
        if reason is None and ref is None:
            reason = "FROM is not a single table reference"
        if reason is None:
            for expr, _alias in items:
                if len(expr) == 1 and expr[0].text == "*":
                    reason = "vector column projected (SELECT *)"
                elif len(expr) >= 2 and expr[-1].text == "*" and expr[-2].text == ".":
                    reason = "vector column projected (qualified *)"
                elif _column_ref(expr) == column:
                    reason = "vector column projected"
                if reason:
                    break
        if reason is not None:
            report.declined.append(reason)
            continue
        assert ref is not None
        parts, span, _alias = ref
        report.shapes.append(
            VectorShape(
                table_parts=parts,
                table_span=span,
                column=column,
                function=function,
                metric=DISTANCE_FUNCTIONS[function],
                query_vector=vector,
                k=int(limit[0].text),
                filtered="where" in clauses,
            )
        )
    return report


def mentions_quoted_mixed_case(sql: str) -> bool:
    """True when the SQL quotes an identifier that has an upper-case letter."""
    return any(t.kind == "qident" and t.text != t.text.lower() for t in tokenize(sql))


def literal_calls(sql: str, function: str) -> list[list[object]]:
    """Argument lists of every ``function(...)`` call whose arguments are all literals."""
    tokens = tokenize(sql)
    calls = []
    for i, tok in enumerate(tokens[:-1]):
        if tok.word != function or tokens[i + 1].text != "(":
            continue
        depth = tokens[i + 1].depth + 1
        j = i + 2
        while j < len(tokens) and tokens[j].depth >= depth:
            j += 1
        values: list[object] = []
        for arg in _split_top(tokens[i + 2 : j], depth):
            sign = ""
            if len(arg) == 2 and arg[0].text in ("-", "+"):
                sign, arg = arg[0].text, arg[1:]
            if len(arg) != 1 or arg[0].kind not in ("str", "num"):
                break
            text = arg[0].text
            if arg[0].kind == "str":
                values.append(text[1:-1].replace("''", "'"))
            else:
                number = float(sign + text)
                values.append(int(number) if number.is_integer() and "." not in text else number)
        else:
            calls.append(values)
    return calls

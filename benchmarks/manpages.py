"""Man pages into a vault: a real corpus nobody on the project wrote (SPEC §11).

Each ``manN/*.gz`` page of the chosen sections becomes one Markdown card,
``manN/<file name without .gz>.md`` (so the card's name is the page's file
name without ``.gz``, e.g. ``ls.1``). Symlinks and ``.so`` alias pages are
skipped; bytes are decoded as UTF-8 with replacement. The title is the NAME
section's text (``ls - list directory contents``), falling back to the card
name when a page has none. troff is stripped to plain text: man(7) and
mdoc(7) macros, pod2man and docutils extras, tbl tables, escapes and
special characters; conditionals, macro definitions, eqn and pic are
dropped. The vault gets an ``.hmd/`` marker and an ``hql.toml`` whose index
is ``.hql/index.sqlite``.

Deterministic: the same pages give byte-identical vaults (files in sorted
order, no dates, no machine paths written).

    python -m benchmarks.manpages OUT_DIR [--man-dir /usr/share/man] [--sections 1]
                                          [--every K [--keep QUERIES.toml]] [--replace]
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAN_DIR = Path("/usr/share/man")
HQL_TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'

# Special characters, \(xx and \[xx]: the ones man pages use; any other becomes nothing.
SPECIAL = {
    "em": "—", "en": "–", "hy": "-", "mi": "-", "aq": "'", "dq": '"', "lq": "“", "rq": "”",
    "oq": "‘", "cq": "’", "Fo": "«", "Fc": "»", "fo": "‹", "fc": "›", "bu": "•", "co": "©",
    "rg": "®", "tm": "™", "de": "°", "mu": "×", "di": "÷", "+-": "±", "<=": "≤", ">=": "≥",
    "!=": "≠", "==": "≡", "->": "→", "<-": "←", "ua": "↑", "da": "↓", "ti": "~", "ha": "^",
    "ga": "`", "aa": "´", "ul": "_", "ru": "_", "sl": "/", "rs": "\\", "ba": "|", "bv": "|",
    "br": "|", "or": "|", "pl": "+", "eq": "=", "lt": "<", "gt": ">", "sc": "§", "ps": "¶",
    "dg": "†", "dd": "‡", "ct": "¢", "Po": "£", "Eu": "€", "eu": "€", "Ye": "¥", "lB": "[",
    "rB": "]", "lC": "{", "rC": "}", "la": "⟨", "ra": "⟩", "sq": "□", "ci": "○", "pd": "∂",
    "if": "∞", "mc": "µ", "*m": "μ", "*a": "α", "*b": "β", "*p": "π", "fm": "′", "sd": "″",
    "ss": "ß", "ae": "æ", "AE": "Æ", ":a": "ä", ":o": "ö", ":u": "ü", ":A": "Ä", ":O": "Ö",
    ":U": "Ü", "'e": "é", "`e": "è", "'a": "á", "`a": "à", "^e": "ê", "~n": "ñ", ",c": "ç",
    "/o": "ø", "oa": "å", "OA": "Å", "12": "½", "14": "¼", "34": "¾", "sh": "#", "Do": "$",
    "at": "@", "rn": "‾", "an": "‾", "tf": "∴", "no": "¬", "AN": "∧", "OR": "∨", "ap": "∼",
    "~=": "≅", "~~": "≈", "nm": "∉", "mo": "∈", "sb": "⊂", "sp": "⊃", "ca": "∩", "cu": "∪",
}
# Predefined strings, \*x, \*(xx and \*[xx], as man(7), mdoc(7) and pod2man define them.
STRINGS = {
    "R": "®", "Tm": "™", "lq": "“", "rq": "”", "Lq": "“", "Rq": "”", "aq": "'", "q": '"',
    "C`": '"', "C'": '"', "PI": "π", "L\"": "“", "R\"": "”", "--": "—", "Aq": "'",
    "Gt": ">", "Lt": "<", "Le": "≤", "Ge": "≥", "Ne": "≠", "Pi": "π", "If": "∞", "Am": "&",
    "Ba": "|", "Na": "NaN", "Ua": "↑", "Da": "↓", "Ra": "→", "La": "←", "Ai": "ANSI",
}
FONT_ALTERNATING = {".BR", ".RB", ".BI", ".IB", ".IR", ".RI"}
FONT_JOINED = {".B", ".I", ".SM", ".SB", ".R", ".CW", ".CR"}
PARAGRAPH = {".PP", ".LP", ".P", ".HP", ".sp", ".Sp", ".br", ".TP", ".TQ", ".bp", ".ne",
             ".Pp", ".Lp", ".INDENT", ".UNINDENT", ".RS", ".RE", ".Bl", ".El", ".Bd", ".Ed"}
SKIP_TO = {".de": "..", ".de1": "..", ".dei": "..", ".am": "..", ".am1": "..", ".ig": "..",
           ".EQ": ".EN", ".PS": ".PE", ".[": ".]"}  # definitions, ignored text, eqn, pic, refer
REQUEST_NAME = re.compile(r"([^\s\\]*)(.*)", re.DOTALL)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Page:
    """One converted man page: its card's name, title, section and Markdown body."""

    name: str
    section: str
    title: str
    body: str

    def card(self) -> str:
        """The card file: a YAML header (title, section) and the body."""
        return (
            f"---\ntitle: {yaml_quote(self.title)}\nsection: {yaml_quote(self.section)}\n"
            f"---\n{self.body}"
        )


def yaml_quote(text: str) -> str:
    """A YAML double-quoted scalar (the converter's text holds no control characters)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ------------------------------------------------------------------ escapes


def _delimited(line: str, i: int) -> int:
    """Index just past a ``'...'``-style argument starting at ``line[i]`` (the delimiter)."""
    if i >= len(line):
        return i
    end = line.find(line[i], i + 1)
    return len(line) if end < 0 else end + 1


def _name(line: str, i: int) -> tuple[str, int]:
    """An escape's name at ``line[i]``: ``x``, ``(xx`` or ``[name]``; and the index after it."""
    if i >= len(line):
        return "", i
    if line[i] == "(":
        return line[i + 1 : i + 3], i + 3
    if line[i] == "[":
        end = line.find("]", i)
        end = len(line) if end < 0 else end
        return line[i + 1 : end], end + 1
    return line[i], i + 1


def _special(name: str) -> str:
    if name in SPECIAL:
        return SPECIAL[name]
    m = re.fullmatch(r"u([0-9A-Fa-f]{4,6})(?:_.*)?", name)
    if m:
        code = int(m.group(1), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""
    if name.startswith("char") and name[4:].isdigit():
        return chr(int(name[4:]) % 0x110000)
    return ""


def unescape(line: str, strings: dict[str, str] | None = None) -> str:
    """``line`` with troff escapes resolved to plain text (``\\"`` ends the line)."""
    strings = STRINGS if strings is None else strings
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:  # a trailing backslash joins lines; here it is just dropped
            break
        e = line[i + 1]
        i += 2
        if e in "\"#":
            break
        if e in "\\e":
            out.append("\\")
        elif e in "-":
            out.append("-")
        elif e in " ~0":
            out.append(" ")
        elif e in "&%c:/,)|^!dupt{}'`.aErz":
            # zero-width or motion escapes print nothing (\z keeps the character after it)
            out.append({"'": "´", "`": "`", ".": ".", "t": " ", "E": "\\"}.get(e, ""))
        elif e == "(" or e == "[":
            name, i = _name(line, i - 1)
            out.append(_special(name))
        elif e == "*":
            name, i = _name(line, i)
            out.append(strings.get(name, ""))
        elif e in "fFgkmMnVY":
            _, i = _name(line, i)
        elif e == "s":
            m = re.match(r"[+-]?(?:\(\d\d|\[[^\]]*\]|'[^']*'|[1-3]\d|\d)", line[i:])
            if m:
                i += m.end()
        elif e in "hvwoxXlLDbHSAROBNCZ":
            j = _delimited(line, i)
            if e == "N":
                digits = line[i + 1 : j - 1]
                out.append(chr(int(digits)) if digits.isdigit() and int(digits) < 0x110000 else "")
            elif e == "o":  # overstrike: keep the characters once
                out.append(unescape(line[i + 1 : j - 1], strings)[:1])
            elif e == "C":
                out.append(_special(line[i + 1 : j - 1]))
            i = j
        else:  # an unknown escape: troff prints the character itself
            out.append(e)
    return "".join(out)


# ------------------------------------------------------------------ requests


def split_args(text: str) -> list[str]:
    """troff arguments: blank-separated words, ``"..."`` quoted (``""`` inside is a quote)."""
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        if text[i] == '"':
            i += 1
            word: list[str] = []
            while i < n:
                if text[i] == "\\" and i + 1 < n:  # an escape stays whole, for unescape()
                    word.append(text[i : i + 2])
                    i += 2
                    continue
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        word.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                word.append(text[i])
                i += 1
            args.append("".join(word))
        else:
            j = i
            while j < n and text[j] not in " \t":
                j += 2 if text[j] == "\\" else 1
            args.append(text[i:j])
            i = min(j, n)
    return args


MDOC_PREFIX = {"Fl": "-", "Xr": "", "In": "<", "Ic": "", "Cm": "", "Ar": "", "Pa": "",
               "Ev": "", "Va": "", "Dv": "", "Er": "", "Li": "", "Em": "", "Sy": "", "Ql": "",
               "Nm": "", "Fa": "", "Ft": "", "Fd": "", "Vt": "", "Ad": "", "An": "", "Lk": "",
               "Mt": "", "Ms": "", "Tn": "", "Sx": "", "No": "", "Ux": "UNIX", "Bx": "BSD",
               "At": "AT&T UNIX", "Nx": "NetBSD", "Fx": "FreeBSD", "Ox": "OpenBSD"}
MDOC_ENCLOSE = {"Op": ("[", "]"), "Oo": ("[", ""), "Oc": ("", "]"), "Dq": ("“", "”"),
                "Do": ("“", ""), "Dc": ("", "”"), "Qq": ('"', '"'), "Sq": ("‘", "’"),
                "Pq": ("(", ")"), "Po": ("(", ""), "Pc": ("", ")"), "Bq": ("[", "]"),
                "Brq": ("{", "}"), "Aq": ("⟨", "⟩"), "Eq": ("<", ">")}
MDOC_PUNCT_AFTER = set(".,;:)]?!")
MDOC_PUNCT_BEFORE = set("([")
MDOC_SKIP = {"Dd", "Os", "Bk", "Ek", "Ns", "Sm", "Db", "Bf", "Ef", "Rs", "Re"}
MDOC_OTHER = {"Fn", "Fo", "Fc", "Ex", "Rv", "St"}
MDOC_STANDARDS = {
    "-p1003.1": "IEEE Std 1003.1 (“POSIX.1”)", "-p1003.2": "IEEE Std 1003.2 (“POSIX.2”)",
    "-p1003.1-2001": "IEEE Std 1003.1-2001 (“POSIX.1”)",
    "-p1003.1-2008": "IEEE Std 1003.1-2008 (“POSIX.1”)", "-ansiC": "ANSI X3.159-1989 (“ANSI C89”)",
    "-isoC": "ISO/IEC 9899:1990 (“ISO C90”)", "-isoC-99": "ISO/IEC 9899:1999 (“ISO C99”)",
    "-isoC-2011": "ISO/IEC 9899:2011 (“ISO C11”)",
    "-susv2": "Version 2 of the Single UNIX Specification",
    "-susv3": "Version 3 of the Single UNIX Specification",
    "-xpg4": "X/Open Portability Guide Issue 4",
}


def mdoc_words(args: list[str], name: str) -> str:
    """Render the arguments of an mdoc line (a macro's, with callable macros inside)."""
    pieces: list[tuple[str, bool]] = []  # (text, glue to the previous piece)
    glue_next = False

    def emit(text: str, glue: bool = False) -> None:
        nonlocal glue_next
        if text:
            pieces.append((text, glue or glue_next))
            glue_next = False

    def walk(words: list[str]) -> None:
        nonlocal glue_next
        k = 0
        while k < len(words):
            w = words[k]
            k += 1
            if w == "Ns":
                glue_next = True
                continue
            if w in MDOC_ENCLOSE:
                left, right = MDOC_ENCLOSE[w]
                # An enclosure takes the rest of the line (up to trailing punctuation).
                rest = words[k:]
                tail: list[str] = []
                if right:
                    while rest and rest[-1] in MDOC_PUNCT_AFTER and len(rest[-1]) == 1:
                        tail.insert(0, rest.pop())
                emit(left)
                glue_next = bool(left)
                walk(rest)
                if right:
                    emit(right, glue=True)
                for p in tail:
                    emit(p, glue=True)
                return
            if w in MDOC_SKIP:
                continue
            if w == "Fl":
                if k < len(words) and words[k] not in MDOC_PREFIX and words[k] not in MDOC_ENCLOSE:
                    emit("-" + words[k])
                    k += 1
                else:
                    emit("-")
                    glue_next = True
                continue
            if w == "Nm" and (k >= len(words) or words[k] in MDOC_PUNCT_AFTER):
                emit(name)
                continue
            if w == "Xr" and k + 1 < len(words) + 1 and k < len(words):
                page = words[k]
                sec = words[k + 1] if k + 1 < len(words) and words[k + 1][:1].isdigit() else ""
                k += 2 if sec else 1
                emit(f"{page}({sec})" if sec else page)
                continue
            if w == "Fn" and k < len(words):
                emit(f"{words[k]}({', '.join(words[k + 1:])})")
                return
            if w == "Fo" and k < len(words):
                emit(words[k] + "(")
                glue_next = True
                k += 1
                continue
            if w == "Fc":
                emit(")", glue=True)
                continue
            if w == "Ex":
                util = next((x for x in words[k:] if x != "-std"), name)
                emit(f"The {util} utility exits 0 on success, and >0 if an error occurs.")
                return
            if w == "Rv":
                fn = next((x for x in words[k:] if x != "-std"), name)
                emit(f"The {fn}() function returns the value 0 if successful; otherwise the "
                     "value -1 is returned and the global variable errno is set to indicate "
                     "the error.")
                return
            if w == "St" and k < len(words):
                emit(MDOC_STANDARDS.get(words[k], words[k].lstrip("-")))
                k += 1
                continue
            if w == "In" and k < len(words):
                emit(f"<{words[k]}>")
                k += 1
                continue
            if w in MDOC_PREFIX:
                fixed = MDOC_PREFIX[w] if w in {"Ux", "Bx", "At", "Nx", "Fx", "Ox"} else ""
                emit(fixed)
                continue
            if len(w) == 1 and w in MDOC_PUNCT_AFTER:
                emit(w, glue=True)
            elif len(w) == 1 and w in MDOC_PUNCT_BEFORE:
                emit(w)
                glue_next = True
            else:
                emit(w)

    walk(args)
    out: list[str] = []
    for text, glue in pieces:
        if out and not glue:
            out.append(" ")
        out.append(text)
    return "".join(out)


# ------------------------------------------------------------------ conversion


class _Converter:
    """One page's troff, line by line, into Markdown lines and the NAME text."""

    def __init__(self, fallback_name: str) -> None:
        self.name = fallback_name
        self.lines: list[str] = []
        self.section = ""
        self.name_text: list[str] = []
        self.strings = dict(STRINGS)
        self.skip_until: str | None = None
        self.brace_depth = 0
        self.table: str | None = None  # inside .TS/.TE: "header" (options, formats), "data"
        self.pending_heading: str | None = None
        self.mdoc_name = ""
        self.title_line = ""  # from .TH / .Dt: name(section)
        self.table_tab = "\t"
        self.join_next = False  # the last text line ended in \c
        self.name_done = False

    # output ---------------------------------------------------------------
    def text(self, line: str) -> None:
        line = line.rstrip()
        if self.pending_heading is not None:
            self.heading(self.pending_heading, line.strip())
            self.pending_heading = None
            return
        if self.join_next and self.lines:  # the previous line ended in \c
            self.join_next = False
            self.lines[-1] += line.lstrip()
            if self.section == "NAME" and self.name_text and not self.name_done:
                self.name_text[-1] += line.lstrip()
            return
        self.lines.append(line)
        if self.section == "NAME" and not self.name_done and line.strip():
            self.name_text.append(line)

    def blank(self) -> None:
        if self.section == "NAME" and self.name_text:
            self.name_done = True  # the title is the NAME section's first paragraph
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def heading(self, level: str, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            return
        if level == "##":
            self.section = title.upper()
        self.blank()
        self.lines.append(f"{level} {title}")
        self.lines.append("")

    def args(self, rest: str) -> list[str]:
        """A request's arguments, each with its escapes resolved."""
        return [unescape(a, self.strings) for a in split_args(rest)]

    # input ----------------------------------------------------------------
    def feed(self, raw: str) -> None:
        if self.skip_until is not None:
            if raw.strip().startswith(self.skip_until):
                self.skip_until = None
            return
        if self.brace_depth:
            self.brace_depth += raw.count("\\{") - raw.count("\\}")
            self.brace_depth = max(self.brace_depth, 0)
            return
        if self.table is not None:
            self.table_line(raw)
            return
        continued = raw.rstrip().endswith("\\c")
        if raw[:1] in ".'":
            self.request(raw)
        else:
            self.text(unescape(raw, self.strings))
        self.join_next = self.join_next or continued

    def table_line(self, raw: str) -> None:
        stripped = raw.strip()
        if stripped.startswith(".TE"):
            self.table = None
            self.blank()
            return
        if self.table == "header":  # an options line (`...;`), then formats; the last ends "."
            if stripped.endswith(";"):
                found = re.search(r"tab\s*\((.)\)", stripped)
                self.table_tab = found.group(1) if found else "\t"
            elif stripped.endswith("."):
                self.table = "data"
            return
        if stripped in {"_", "=", ""} or stripped.startswith(".T&"):
            return
        if raw[:1] in ".'":
            self.request(raw)
            return
        # T{ ... T} wraps a cell's text over lines: the markers go, the words stay
        line = raw[2:] if raw.startswith("T}") else raw
        line = line[:-2] if line.endswith("T{") else line
        cells = [unescape(c, self.strings).strip() for c in line.split(self.table_tab)]
        cells = [c for c in cells if c and c not in {"_", "="}]
        if cells:
            self.text("  ".join(cells))

    def request(self, raw: str) -> None:
        body = raw[1:].lstrip(" \t")
        if body.startswith(('\\"', "\\#")) or not body.strip():
            return
        # A request's name ends at a blank or an escape (`.el\{\` is `.el`).
        split = REQUEST_NAME.match(body)
        assert split is not None
        macro, rest = split.group(1), split.group(2).strip()
        m = "." + macro
        if m in SKIP_TO:
            self.skip_until = SKIP_TO[m]
            return
        if m in {".if", ".ie", ".el", ".while"}:
            self.brace_depth = max(body.count("\\{") - body.count("\\}"), 0)
            return
        if m == ".ds" or m == ".ds1":
            key, _, value = rest.partition(" ")
            value = value[1:] if value.startswith('"') else value
            self.strings[key] = unescape(value, self.strings)
            return
        if m == ".TS":
            self.table = "header"
            self.table_tab = "\t"
            self.blank()
            return
        if m == ".TH":
            args = self.args(rest)
            if args:
                self.title_line = f"{args[0]}({args[1]})" if len(args) > 1 else args[0]
            return
        if m == ".Dt":
            args = self.args(rest)
            if args:
                self.title_line = f"{args[0].lower()}({args[1]})" if len(args) > 1 else args[0]
            return
        if m in {".SH", ".Sh"}:
            words = " ".join(self.args(rest))
            if words:
                self.heading("##", words)
            else:
                self.pending_heading = "##"
            return
        if m in {".SS", ".Ss"}:
            words = " ".join(self.args(rest))
            if words:
                self.heading("###", words)
            else:
                self.pending_heading = "###"
            return
        if m in FONT_JOINED:
            if rest:
                self.text(" ".join(self.args(rest)))
            return
        if m in FONT_ALTERNATING:
            self.text("".join(self.args(rest)))
            return
        if m == ".IP":
            args = self.args(rest)
            self.blank()
            if args and args[0]:
                self.text(args[0])
            return
        if m in {".UR", ".MT", ".URL"}:
            args = self.args(rest)
            if args:
                self.text(args[0] if m != ".URL" or len(args) < 2 else f"{args[1]} {args[0]}")
            return
        if m in {".UE", ".ME"}:
            if rest:
                self.text(unescape(rest, self.strings))
            return
        if m in {".SY", ".OP"}:
            args = self.args(rest)
            self.text(("[" + " ".join(args) + "]") if m == ".OP" else " ".join(args))
            return
        if m == ".Nm":
            args = self.args(rest)
            if args and not self.mdoc_name:
                self.mdoc_name = args[0]
            self.text(mdoc_words(["Nm", *args], self.mdoc_name or self.name))
            return
        if m == ".Nd":
            self.text("- " + mdoc_words(self.args(rest), self.mdoc_name))
            return
        if m == ".It":
            self.blank()
            words = mdoc_words(self.args(rest), self.mdoc_name or self.name)
            if words:
                self.text(words)
            return
        if m in PARAGRAPH:
            self.blank()
            return
        if macro in MDOC_PREFIX or macro in MDOC_ENCLOSE or macro in MDOC_OTHER:
            # mdoc inline macros (.Fl, .Ar, .Op, .Xr, .Fn, ...): the words they print
            args = self.args(rest)
            words = mdoc_words([macro, *args], self.mdoc_name or self.name)
            if words:
                self.text(words)
            return
        # any other request (.nf, .fi, .in, .ft, .IX, .nr, ...) prints nothing

    def result(self) -> tuple[str, str]:
        """(the NAME section's text on one line, the Markdown body)."""
        name_line = " ".join(" ".join(self.name_text).split())
        heading = self.title_line or self.name
        body = f"# {heading}\n\n" + "\n".join(self.lines).strip("\n") + "\n"
        body = re.sub(r"\n{3,}", "\n\n", body)
        return name_line, body


def is_alias(text: str) -> bool:
    """A ``.so`` page: its first request (after comments and blanks) includes another page."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(('.\\"', "'\\\"", '\\"')) or stripped == ".":
            continue
        return stripped.startswith((".so ", ".so\t", "'so "))
    return False


def joined_lines(text: str) -> Iterator[str]:
    """Input lines, with a line ending in an unescaped backslash joined to the next."""
    held = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            held += line[:-1]
            continue
        yield held + line
        held = ""
    if held:
        yield held


def convert(text: str, name: str, section: str) -> Page:
    """One page's troff source (already decoded) as a card."""
    conv = _Converter(name.rsplit(".", 1)[0] if "." in name else name)
    for raw in joined_lines(text):
        conv.feed(raw)
    name_line, body = conv.result()
    title = name_line or name
    return Page(name=name, section=section, title=CONTROL.sub("", title),
                body=CONTROL.sub("", body))


# ------------------------------------------------------------------ vault


@dataclass
class Tally:
    written: int = 0
    symlinks: int = 0
    aliases: int = 0
    unreadable: int = 0


def page_files(man_dir: Path, section: str) -> list[Path]:
    """``man<section>/*.gz`` under ``man_dir``, sorted by name (symlinks included)."""
    folder = man_dir / f"man{section}"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(".gz"))


def pages(
    man_dir: Path, sections: Iterable[str], every: int = 1, tally: Tally | None = None,
    keep: frozenset[str] = frozenset(),
) -> Iterator[Page]:
    """The converted pages, section by section in sorted order; every ``every``-th kept page,
    and every page named in ``keep`` (a file name without ``.gz``, e.g. ``bash.1``)."""
    tally = tally if tally is not None else Tally()
    kept = 0
    for section in sections:
        for path in page_files(man_dir, section):
            if path.is_symlink():
                tally.symlinks += 1
                continue
            try:
                raw = gzip.decompress(path.read_bytes())
            except (OSError, EOFError, zlib.error) as exc:
                print(f"{path.name}: skipped, cannot be read: {exc}", file=sys.stderr)
                tally.unreadable += 1
                continue
            text = raw.decode("utf-8", errors="replace")
            if is_alias(text):
                tally.aliases += 1
                continue
            kept += 1
            if (kept - 1) % every and path.name[: -len(".gz")] not in keep:
                continue
            tally.written += 1
            yield convert(text, path.name[: -len(".gz")], section)


def write_vault(
    out: Path, man_dir: Path = DEFAULT_MAN_DIR, sections: Iterable[str] = ("1",),
    every: int = 1, replace: bool = False, keep: frozenset[str] = frozenset(),
) -> Tally:
    """Convert the pages into a fresh vault at ``out``; refuse to write over anything else."""
    if out.exists() and any(out.iterdir()):
        if not replace:
            raise ValueError(f"{out}: exists and is not empty (--replace rewrites a vault)")
        if not (out / ".hmd").is_dir():
            raise ValueError(f"{out}: not a vault (no .hmd/), so --replace will not delete it")
        shutil.rmtree(out)
    sections = list(sections)
    out.mkdir(parents=True, exist_ok=True)
    (out / ".hmd").mkdir(exist_ok=True)
    (out / "hql.toml").write_text(HQL_TOML, encoding="utf-8")
    tally = Tally()
    for page in pages(man_dir, sections, every, tally, keep):
        folder = out / f"man{page.section}"
        folder.mkdir(exist_ok=True)
        (folder / f"{page.name}.md").write_bytes(page.card().encode("utf-8"))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the vault directory to create")
    parser.add_argument("--man-dir", type=Path, default=DEFAULT_MAN_DIR)
    parser.add_argument("--sections", default="1", help="comma-separated, e.g. 2,3")
    parser.add_argument("--every", type=int, default=1, help="keep every k-th page (a sample)")
    parser.add_argument("--replace", action="store_true", help="rewrite an existing vault")
    parser.add_argument("--keep", type=Path, action="append", default=[],
                        help="a query set whose relevant pages a sample always keeps")
    args = parser.parse_args(argv)
    from hqltui.core.evaluation import read_queries

    if args.every < 1:
        parser.error("--every must be at least 1")
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    if not any(page_files(args.man_dir, s) for s in sections):
        print(f"{args.man_dir}: no man{'/man'.join(sections)} pages (*.gz) found", file=sys.stderr)
        return 1
    try:
        keep = frozenset(r for path in args.keep for q in read_queries(path) for r in q.relevant)
        tally = write_vault(args.out, args.man_dir, sections, args.every, args.replace, keep)
    except (OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(
        f"{tally.written} cards written to {args.out} "
        f"({tally.symlinks} symlinks and {tally.aliases} .so pages skipped"
        + (f", {tally.unreadable} unreadable" if tally.unreadable else "") + ")"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The YAML 1.2 core schema on top of PyYAML's C loader.

PyYAML resolves plain scalars by YAML 1.1 rules (``yes`` is true, ``2026-09-18``
is a date, ``0b101`` and ``1_000`` are integers). Card headers are read the way
``hql`` reads them, by the 1.2 core schema, so the implicit resolvers and the
constructors are replaced here; libyaml still does all of the parsing.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

try:  # the C extension is a declared requirement; the fallback keeps errors readable
    _Base = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader

Header = dict[str, Any]

I64_MIN, I64_MAX = -(2**63), 2**63 - 1

_STR = "tag:yaml.org,2002:str"
_KEEP = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


# The most YAML nodes a header (or link annotation) may expand to, every alias
# counted at each place it is used. A real header has tens to hundreds; an alias
# bomb (nine levels of nine aliases) expands to hundreds of millions, which the
# text contract's walk would visit one by one. Past the bound the card is skipped.
MAX_NODES = 100_000


class HeaderError(ValueError):
    """A header that the core schema cannot give a meaning to."""


def _expanded_nodes(root: yaml.Node, bound: int) -> int:
    """How many nodes a walk of ``root`` visits with aliases expanded, counted on the
    composed graph (each shared node once), stopping once past ``bound``. Raises
    ``HeaderError`` for an alias that refers to itself."""
    return _expanded_size(root, bound, {}, set())


def _expanded_size(node: yaml.Node, bound: int, sizes: dict[int, int], on_path: set[int]) -> int:
    """``_expanded_nodes``'s walk. A module function, not a closure: a recursive closure
    is a reference cycle, garbage only the cyclic collector frees, made once per header."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in on_path:
        raise HeaderError("invalid YAML: an alias refers to itself")
    total = 1
    if isinstance(node, yaml.SequenceNode | yaml.MappingNode):
        on_path.add(key)
        children = (
            node.value
            if isinstance(node, yaml.SequenceNode)
            else [n for pair in node.value for n in pair]
        )
        for child in children:
            total += _expanded_size(child, bound, sizes, on_path)
            if total > bound:
                break
        on_path.discard(key)
    sizes[key] = total = min(total, bound + 1)
    return total


# _Base is chosen at import (the C loader or its fallback), so mypy cannot read it as a type.
class CoreLoader(_Base):  # type: ignore[misc,valid-type]  # a variable base class
    """Safe loader with the YAML 1.2 core schema's resolvers and nothing else."""

    yaml_implicit_resolvers: dict = {}
    yaml_constructors = {k: v for k, v in _Base.yaml_constructors.items() if k in _KEEP}

    def construct_mapping(self, node, deep=False):
        # Duplicate keys are an error in YAML 1.2 (and in hql); PyYAML keeps the last.
        # Keys brought in by a merge key may be overridden, so only own keys count.
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    raise HeaderError("a map key is not a scalar") from None
                if duplicate:
                    raise HeaderError(f"duplicate key {key!r}")
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _resolver(tag: str, pattern: str, first: str | list[str]) -> None:
    """``first``: the characters a match may start with (a list when one is "")."""
    CoreLoader.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))


_resolver("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_resolver("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])
_resolver(
    "tag:yaml.org,2002:int",
    r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$",
    "-+0123456789",
)
_resolver(
    "tag:yaml.org,2002:float",
    r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:\.inf|\.Inf|\.INF)
        |\.nan|\.NaN|\.NAN)$""",
    "-+0123456789.",
)
_resolver("tag:yaml.org,2002:merge", r"^(?:<<)$", "<")


def _construct_int(loader: CoreLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    try:
        if text.startswith("0o"):
            value = int(text[2:], 8)
        elif text.startswith("0x"):
            value = int(text[2:], 16)
        else:
            value = int(text, 10)
    except ValueError:
        raise HeaderError(f"{text!r} is not an integer") from None
    if not I64_MIN <= value <= I64_MAX:
        raise HeaderError(f"unsupported YAML value: the integer {text} is outside 64-bit range")
    return value


def _construct_float(loader: CoreLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node)
    lowered = text.lower().lstrip("+-")
    if lowered in (".inf", ".nan"):
        raise HeaderError(f"unsupported YAML value: {text} is not a finite number")
    try:
        value = float(text)
    except ValueError:
        raise HeaderError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise HeaderError(f"unsupported YAML value: {text} is not a finite number")
    return value


CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
CoreLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def _undefined(loader: CoreLoader, node: yaml.Node) -> Any:
    raise HeaderError(f"unsupported YAML value: the tag {node.tag} is not part of the core schema")


CoreLoader.add_constructor(None, _undefined)


def _check_keys(value: Any, where: str = "") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise HeaderError(f"map keys must be strings, and {where}{key!r} is not")
            _check_keys(item, f"{where}{key}.")
    elif isinstance(value, list):
        for item in value:
            _check_keys(item, where)


def load_mapping(source: str, line_offset: int = 0) -> Header:
    """Parse ``source`` as a YAML 1.2 core-schema mapping with string keys.

    ``line_offset`` is how many file lines precede ``source``, so an error
    names the line of the file, not of the header.

    Raises :class:`HeaderError` with a one-line reason for anything else.
    """
    if all(not line.strip() or line.lstrip().startswith("#") for line in source.splitlines()):
        return {}
    try:
        loader = CoreLoader(source)
        try:
            node = loader.get_single_node()
            if node is not None and _expanded_nodes(node, MAX_NODES) > MAX_NODES:
                raise HeaderError(
                    f"the YAML expands to more than {MAX_NODES:,} nodes (aliases counted "
                    "at every use), the most a header may hold"
                )
            value = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
        if isinstance(value, dict):
            _check_keys(value)  # a self-referencing alias recurses here
    except HeaderError:
        raise
    except yaml.MarkedYAMLError as exc:
        problem = exc.problem or exc.context or "malformed"
        mark = exc.problem_mark
        where = f" at line {mark.line + 1 + line_offset}, column {mark.column + 1}" if mark else ""
        raise HeaderError(f"invalid YAML: {problem}{where}") from None
    except RecursionError:
        raise HeaderError("invalid YAML: an alias refers to itself") from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise HeaderError(f"invalid YAML: {exc}") from None
    if not isinstance(value, dict):
        raise HeaderError("a header must be a YAML mapping")
    return value


def header_strings(header: Header, skip_title: bool = True) -> list[str]:
    """Every string of an authored header, keys sorted, lists in order (the text contract)."""
    out: list[str] = []
    for key in sorted(header):
        if skip_title and key == "title":
            continue
        _strings_of(header[key], out)
    return out


def _strings_of(value: Any, out: list[str]) -> None:
    """``header_strings``'s walk (a module function: a recursive closure is a cycle)."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings_of(item, out)
    elif isinstance(value, dict):
        for key in sorted(value):
            _strings_of(value[key], out)

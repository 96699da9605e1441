"""Where a key is written in the TOML text: tomllib keeps no positions, and every config
problem names its line."""

from __future__ import annotations

import re
from typing import Any

_BARE_KEY = r"[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'"
_DOTTED_KEY = rf"(?:{_BARE_KEY})(?:\s*\.\s*(?:{_BARE_KEY}))*"


def _key_parts(text: str) -> list[str]:
    return [p.strip("\"'") for p in re.findall(_BARE_KEY, text)]


def _strip_comment(text: str) -> str:
    """The line without its `# comment` (a # inside a string stays)."""
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            return text[:i]
        i += 1
    return text


class LineIndex:
    """Maps (table, key) to the 1-based line where `key =` is written, and list items to
    their own lines (tomllib keeps no positions).

    Knows [tables], [[arrays of tables]], dotted keys (`adaptive.metric = ...` in [sweep],
    `sweep.repeats = ...` at the top), inline tables (`adaptive = { metric = ... }`) and the
    extent of a multi-line array, so an item is found on its own line.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
    _KEY = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
    _INLINE_KEY = re.compile(rf"\s*({_DOTTED_KEY})\s*=")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.where: dict[tuple[str, str], int] = {}
        self.spans: dict[tuple[str, str], tuple[int, int]] = {}
        self.tables: dict[str, int] = {}
        table = ""
        counts: dict[str, int] = {}
        skip_until = 0
        for no, line in enumerate(self.lines, start=1):
            if no <= skip_until:
                continue  # inside a multi-line value
            m = self._HEADER.match(line)
            if m:
                name = ".".join(_key_parts(m.group(2)))
                if m.group(1) == "[[":
                    idx = counts.get(name, 0)
                    counts[name] = idx + 1
                    name = f"{name}#{idx}"
                table = name
                self.tables.setdefault(table, no)
                continue
            k = self._KEY.match(line)
            if not k:
                continue
            full = self._register(table, _key_parts(k.group(1)), no)
            end = self._value_end(no, k.end())
            self.spans.setdefault(full, (no, end))
            rest = line[k.end():].lstrip()
            if rest.startswith("{"):
                self._inline(f"{full[0]}.{full[1]}" if full[0] else full[1], rest[1:], no)
            skip_until = end

    def _register(self, table: str, parts: list[str], no: int) -> tuple[str, str]:
        """Record a (dotted) key and the tables it implies; returns its (table, key)."""
        for i in range(len(parts) - 1):
            parent = ".".join(p for p in (table, *parts[:i]) if p)
            self.where.setdefault((parent, parts[i]), no)
            self.tables.setdefault(".".join(p for p in (table, *parts[: i + 1]) if p), no)
        full = (".".join(p for p in (table, *parts[:-1]) if p), parts[-1])
        self.where.setdefault(full, no)
        return full

    def _inline(self, table: str, text: str, no: int) -> None:
        """Keys of an inline table (one line in TOML), nested ones included."""
        self.tables.setdefault(table, no)
        stack = [table]
        i, n = 0, len(text)
        expect_key = True
        while i < n and stack:
            c = text[i]
            if expect_key:
                m = self._INLINE_KEY.match(text, i)
                if m:
                    full = self._register(stack[-1], _key_parts(m.group(1)), no)
                    i = m.end()
                    expect_key = False
                    rest = text[i:].lstrip()
                    if rest.startswith("{"):
                        stack.append(f"{full[0]}.{full[1]}" if full[0] else full[1])
                        self.tables.setdefault(stack[-1], no)
                        i = n - len(rest) + 1
                        expect_key = True
                    continue
            if c in "\"'":
                close = text.find(c, i + 1)
                i = n if close < 0 else close + 1
                continue
            if c == ",":
                expect_key = True
            elif c == "}":
                stack.pop()
            i += 1

    def _value_end(self, no: int, col: int) -> int:
        """Last line of the value that starts at line `no`, column `col` (arrays may span lines)."""
        depth = 0
        started = False
        for ln in range(no, len(self.lines) + 1):
            text = self.lines[ln - 1]
            i = col if ln == no else 0
            while i < len(text):
                c = text[i]
                if c == "#":
                    break
                if c in "\"'":
                    started = True
                    triple = text.startswith(c * 3, i)
                    if triple:  # multi-line strings: find the closing triple quote
                        close = text.find(c * 3, i + 3)
                        if close < 0:
                            return self._string_end(ln, c * 3)
                        i = close + 3
                        continue
                    close = i + 1
                    while close < len(text) and text[close] != c:
                        close += 2 if c == '"' and text[close] == "\\" else 1
                    i = close + 1
                    continue
                if c in "[{":
                    depth += 1
                    started = True
                elif c in "]}":
                    depth -= 1
                elif not c.isspace():
                    started = True
                i += 1
            if started and depth <= 0:
                return ln
        return no

    def _string_end(self, no: int, quote: str) -> int:
        for ln in range(no + 1, len(self.lines) + 1):
            if quote in self.lines[ln - 1]:
                return ln
        return no

    def alias(self, prefix: str) -> None:
        """Tables under `prefix` (a scale's overlay, e.g. "scale.quick.") answer for the table
        they replace ("scale.quick.base" for "base"), so problems name the overlay's lines."""
        for (table, key), no in list(self.where.items()):
            if table.startswith(prefix):
                self.where[(table[len(prefix):], key)] = no
        for (table, key), span in list(self.spans.items()):
            if table.startswith(prefix):
                self.spans[(table[len(prefix):], key)] = span
        for table, no in list(self.tables.items()):
            if table.startswith(prefix):
                self.tables[table[len(prefix):]] = no

    def line(self, table: str, key: str | None = None) -> int | None:
        if key is None:
            return self.tables.get(table)
        return self.where.get((table, key)) or self.tables.get(table)

    def item_line(self, table: str, key: str, value: Any, after: int | None = None) -> int | None:
        """The line of one item of the value of `key` (a multi-line list), else the key's line.

        A string item is matched with its quotes, so an item that is part of another is not
        taken for it; `after` starts the search there (items in order)."""
        first = self.line(table, key)
        span = self.spans.get((table, key))
        if span is None or isinstance(value, (list, dict)):
            return first
        lo, hi = span
        if isinstance(value, str):
            pats = [re.compile(re.escape(q + value + q)) for q in ('"', "'")]
        elif isinstance(value, (bool, int, float)):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            pats = [re.compile(rf"(?<![\w.\-+]){re.escape(text)}(?![\w.])")]
        else:
            return first
        for ln in range(max(lo, after or lo), hi + 1):
            text = self.lines[ln - 1]
            if ln == lo:
                eq = text.find("=")
                text = " " * (eq + 1) + text[eq + 1:]
            if any(p.search(_strip_comment(text)) for p in pats):
                return ln
        return first

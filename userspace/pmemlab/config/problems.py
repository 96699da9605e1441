"""Config problems, collected with their line and raised together as one ConfigError."""

from __future__ import annotations

import json
from typing import Any

from pmemlab import params as P
from pmemlab.errors import ConfigError


class Problems:
    """Collects config problems with their line; raises them together."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []
        self._seen: set[str] = set()

    def add(self, line: int | None, text: str, where: str | None = None) -> None:
        """A problem at `line` of the config, or at `where` (e.g. "--set") when it came from elsewhere."""
        where = where or (f"{self.source}:{line}" if line else self.source)
        msg = f"{where}: {text}"
        if msg not in self._seen:
            self._seen.add(msg)
            self.items.append(msg)

    def add_problem(self, line: int | None, table: str, prob: P.Problem, where: str | None = None) -> None:
        prefix = f"{table}." if table else ""
        self.add(line, f"{prefix}{prob.key} = {show(prob.value)}: {prob.reason} (allowed: {prob.allowed})", where)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        fix = "correct the config; nothing was sent to the module"
        n = len(self.items)
        if n == 1:
            raise ConfigError(f"invalid config: {self.items[0]}", fix)
        shown = self.items[:25]
        more = [f"{self.source}: ... and {n - len(shown)} more"] if n > len(shown) else []
        raise ConfigError(f"invalid config: {n} problems, one per line above", fix,
                          details=[*shown, *more])


def show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (str, bool)) else repr(value)  # TOML spelling

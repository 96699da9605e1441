"""Progress of a sweep on stderr: runs done of runs planned, an ETA, the last point."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from pmemlab.config import Point

BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
              "[{elapsed}<{remaining}, {rate_fmt}]{postfix}")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A tqdm bar, or nothing when disabled (--no-progress).

    `interactive` says whether the stream is a terminal; the bar is drawn the same either way
    today, and this is the one place to change what a redirected stderr gets.
    """

    def __init__(self, total: int, desc: str, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = _is_terminal(self.stream)
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True, file=self.stream,
                             bar_format=BAR_FORMAT)

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def grow(self, runs: int = 1) -> None:
        """Runs beyond the plan (adaptive repeats)."""
        if self._bar is not None:
            self._bar.total += runs
            self._bar.refresh()

    def advance(self, point: Point | None = None, aggregate: dict[str, Any] | None = None) -> None:
        """One run done; with its point and aggregate row, show what it measured."""
        if self._bar is None:
            return
        self._bar.update(1)
        if point is None or aggregate is None:
            return
        post = " ".join([*([point.target] if point.target else []), *(f"{k}={v}" for k, v in point.varied.items())])
        bw = aggregate.get("bw_gbps")
        if isinstance(bw, float):
            post += f" {bw:.2f} GB/s"
        status = aggregate.get("status")
        if status != "ok":
            post += f" [{status}]"
        self._bar.set_postfix_str(post[:80], refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

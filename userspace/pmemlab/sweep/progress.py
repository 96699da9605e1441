"""Progress of a sweep on stderr: runs done of runs planned, an ETA, the last point.

On a terminal a tqdm bar redrawn in place. On anything else (a log file, a pipe, CI) whole
lines, never carriage returns: the first run, then at most one line every `LINE_INTERVAL_S`
seconds, and a last line when the sweep ends."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

from pmemlab.config import Point

BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
              "[{elapsed}<{remaining}, {rate_fmt}]{postfix}")
LINE_INTERVAL_S = 10.0


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """A tqdm bar on a terminal, lines elsewhere, or nothing when disabled (--no-progress)."""

    def __init__(self, total: int, desc: str, enabled: bool = True, stream: TextIO | None = None,
                 interval_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = _is_terminal(self.stream)
        self.enabled = enabled
        self.total = total
        self.desc = desc
        self.done = 0
        self.interval_s = LINE_INTERVAL_S if interval_s is None else interval_s
        self._clock = clock
        self._start = clock()
        self._last_line: float | None = None
        self._line_done = 0  # runs done when the last line was printed
        self._post = ""
        self._bar: Any = None
        if enabled and self.interactive:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True, file=self.stream,
                             bar_format=BAR_FORMAT)

    def grow(self, runs: int = 1) -> None:
        """Runs beyond the plan (adaptive repeats)."""
        self.total += runs
        if self._bar is not None:
            self._bar.total += runs
            self._bar.refresh()

    def advance(self, point: Point | None = None, aggregate: dict[str, Any] | None = None) -> None:
        """One run done; with its point and aggregate row, show what it measured."""
        if not self.enabled:
            return
        self.done += 1
        if point is not None and aggregate is not None:
            post = " ".join([*([point.target] if point.target else []),
                             *(f"{k}={v}" for k, v in point.varied.items())])
            bw = aggregate.get("bw_gbps")
            if isinstance(bw, float):
                post += f" {bw:.2f} GB/s"
            status = aggregate.get("status")
            if status != "ok":
                post += f" [{status}]"
            self._post = post[:80]
        if self._bar is not None:
            self._bar.update(1)
            if point is not None and aggregate is not None:
                self._bar.set_postfix_str(self._post, refresh=False)
            return
        now = self._clock()
        if self._last_line is None or now - self._last_line >= self.interval_s:
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self._start
        left = ""
        if 0 < self.done < self.total and elapsed > 0:
            left = f", ~{_duration(elapsed / self.done * (self.total - self.done))} left"
        pct = 100 * self.done / self.total if self.total else 100.0
        last = f"; last: {self._post}" if self._post else ""
        print(f"{self.desc}: {self.done}/{self.total} runs ({pct:.0f} %), {_duration(elapsed)}{left}{last}",
              file=self.stream, flush=True)
        self._last_line = now
        self._line_done = self.done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and self.done != self._line_done:
            self._line(self._clock())

"""The kernel log from a mark on, read from /dev/kmsg in the test process.

A line count of dmesg taken before an action stops pointing at the new lines once the ring buffer
is full (after the safety tests' many loads it is), and dmesg in a process of its own costs ~0.1 s
under TCG. A /dev/kmsg descriptor moved to the end is a mark that holds: every record after it is
read once, in order, as dmesg prints it."""
from __future__ import annotations

import os
from types import TracebackType


def new_kernel_log(kmsg: int) -> list[str]:
    """The records written since `kmsg` (a non-blocking /dev/kmsg descriptor) was moved to the end,
    or last read, as dmesg prints them ("[seconds] text")."""
    lines = []
    while True:
        try:
            rec = os.read(kmsg, 8192).decode(errors="replace")
        except BlockingIOError:
            return lines
        except BrokenPipeError:  # records overwritten before they were read: go on from the oldest kept
            lines.append("[pmemlab: kernel log records were lost before this read]")
            continue
        head, _, text = rec.partition(";")
        fields = head.split(",")
        usec = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else 0
        # the text's first line; the lines after it (" KEY=value") are the record's dictionary
        lines.append(f"[{usec // 10**6:5d}.{usec % 10**6:06d}] {text.split(chr(10))[0]}")


class KernelLog:
    """`with KernelLog() as log:` marks the log; log.lines() is everything written since the mark."""

    def __init__(self) -> None:
        self._kmsg = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self._kmsg, 0, os.SEEK_END)
        self._seen: list[str] = []

    def lines(self) -> list[str]:
        self._seen += new_kernel_log(self._kmsg)
        return list(self._seen)

    def close(self) -> None:
        os.close(self._kmsg)

    def __enter__(self) -> KernelLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

"""Reading a small file (sysfs, /proc) whole, the cheap way: os.read to the end, no file object and
no text decoder per read. A sweep reads several such files at every point (issue 37)."""
from __future__ import annotations

import os
from pathlib import Path


def read_all(path: Path | str) -> str:
    """The whole file as text, undecodable bytes replaced. OSError propagates (the caller knows
    what a missing file means where it reads)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")

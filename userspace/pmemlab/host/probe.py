"""How the controller reads the host: where /proc, /sys and /dev are (`HostPaths`, pointed at
fixture trees by tests) and how an external tool runs (`run_tool`, replaced by tests). Every
module of host/ reads through these, so neither needs the module that uses it."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ToolRunner = Callable[[list[str]], "ToolResult"]


@dataclass
class ToolResult:
    returncode: int
    stdout: str
    stderr: str = ""


def run_tool(argv: list[str], timeout: float = 20.0) -> ToolResult:
    """Run an external tool; a missing tool gives returncode 127."""
    if shutil.which(argv[0]) is None:
        return ToolResult(127, "", f"{argv[0]}: not installed")
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ToolResult(126, "", str(exc))
    return ToolResult(cp.returncode, cp.stdout, cp.stderr)


@dataclass
class HostPaths:
    """Where /proc and /sys are (tests point these at fixture trees)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path = Path("/dev")

"""The script the guest runs (guest.sh beside this file: namespaces, the CXL lanes, the command),
with the values of one boot filled in."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from .common import TOP, VENV_BIN

GUEST_SCRIPT = (Path(__file__).resolve().parent / "guest.sh").read_text()


def render(args, cmd: list[str], cxl_ram: int, cxl_dir: Path | None, hmat: list[tuple[int, int, int, int]],
           ko: Path | None, tmp: Path) -> str:
    """guest.sh for one boot: its @KEY@ placeholders replaced, each value quoted for bash."""
    script = GUEST_SCRIPT
    ns_sizes = [s.strip() for s in args.cxl_namespaces.split(",") if s.strip()]
    for key, val in {"@CXL@": "1" if args.cxl else "0", "@CXL_RAM@": "1" if cxl_ram else "0",
                     "@CXL_GRAN@": str(args.cxl_gran), "@CXL_NS_SIZES@": " ".join(map(shlex.quote, ns_sizes)),
                     "@CXL_DIR@": shlex.quote(str(cxl_dir or "")), "@TOP@": shlex.quote(str(TOP)),
                     "@HMAT@": shlex.quote(" ".join(":".join(map(str, e)) for e in hmat)),
                     "@OUT@": shlex.quote(str(tmp)), "@KO@": shlex.quote(str(ko or "")),
                     "@PATH@": shlex.quote(f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                     "@CWD@": shlex.quote(os.getcwd()), "@CMD@": shlex.join(cmd)}.items():
        script = script.replace(key, val)
    return script

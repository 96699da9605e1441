"""The backend a command runs on, from its options: the module (`--sysfs`), or the user backend
(`backend=user`, `--target`); and the online CPUs a run is sized by. Tests replace `module` and
`online_cpus` here."""

from __future__ import annotations

import argparse
from pathlib import Path

from pmemlab.backends.protocol import Backend
from pmemlab.backends.spec import BackendSpec
from pmemlab.errors import ConfigError
from pmemlab.host import machine, probe


def module(args: argparse.Namespace) -> Backend:
    return BackendSpec("kernel", sysfs=Path(args.sysfs) if args.sysfs else None).open()


def backend(args: argparse.Namespace, opts: dict[str, str]) -> Backend:
    """The module, or the user backend (backend=user: pmemlab-run on --target / target=)."""
    kind = getattr(args, "backend", None) or opts.get("backend", "kernel")
    if kind != "user":
        if set(opts) - {"backend"}:
            raise ConfigError(f"{', '.join(sorted(set(opts) - {'backend'}))}: target options of backend=user",
                              "the module's target is chosen at insmod; add backend=user or drop them")
        return module(args)
    spec = BackendSpec("user", target=opts.get("target") or args.target or "",
                       options={k: v for k, v in opts.items() if k not in ("backend", "target")})
    return spec.open()


def online_cpus() -> int:
    return int(machine.cpu_info(probe.HostPaths())["online_cpus"])

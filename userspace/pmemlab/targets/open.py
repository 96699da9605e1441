"""Opening a target: the backend that runs on it.

On the module each target is a named target, `/sys/kernel/pmemlab/targets/<name>` (docs/interface.md),
driven through that directory as through the top level: used as it is when the module holds it
(the same target, else refused), added with `targets/add` when it does not, and removed at the end
only when it was added here. The module stays loaded as it is: no target is reloaded, and the
`insmod ... target=` target (the top level) is never touched. The user backend is re-pointed
(pmemlab-run gets the load's target and options).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Protocol, TextIO

from pmemlab import params as P
from pmemlab.backends.protocol import Backend, BackendKind, load_identity
from pmemlab.backends.spec import BackendSpec
from pmemlab.backends.user import TARGET_KEYS
from pmemlab.errors import ConfigError, ModuleNotLoaded, PmemlabError
from pmemlab.backends.module import Module, SysfsIO, sysfs_root
from pmemlab.targets.spec import MODULE_KEYS, NAME_RE, TargetLoad, target_name

TARGETS_DIR = "targets"
# a load key of a named target -> the fact of the target that shows it (a size in bytes for the first two)
FACT_OF_KEY = {"dram_size": "target_size", "dram_pages": "target_page_size", "dram_node": "target_node",
               "dram_nodes": "target_nodes", "dram_weights": "target_weights"}


class NamedTarget(Module):
    """A named target: driven as the top level is; its part of the resume identity is what the
    target is (its facts), not the module's load parameters (those make the top-level target)."""

    def identity(self) -> dict[str, Any]:
        facts = self.facts()
        return load_identity(self.kind, {k: facts[k] for k in ("target", *FACT_OF_KEY.values())
                                         if facts.get(k) not in (None, "")})


class LoadRefused(PmemlabError):
    """The backend could not be opened on a target (the module refused it, the runner cannot map it)."""


class Loader(Protocol):
    """Opens the backend on one target after another."""

    @property
    def kind(self) -> BackendKind:
        """The backend it opens."""

    def open(self, load: TargetLoad) -> Backend:
        """The backend running on `load` (raises LoadRefused when it cannot)."""

    def close(self) -> None:
        """Put back what was there before the first open."""


class NamedTargets:
    """The module's named targets: each load the directory targets/<name> (`load.named`: a target
    the module holds already; else the label's name), added when absent, found when present;
    `close` removes what was added."""

    kind: BackendKind = "kernel"

    def __init__(self, root: Path, io: SysfsIO | None = None, log: TextIO | None = None) -> None:
        self.top = Module(root, io=io)
        self.log = log
        self.added: list[str] = []

    def module(self, name: str) -> NamedTarget:
        """The backend of the named target `name` (its directory, the module's parameters)."""
        return NamedTarget(self.top.root / TARGETS_DIR / name, io=self.top.io, modparams=self.top.modparams)

    def open(self, load: TargetLoad) -> Backend:
        # no module, or one without named targets: the whole sweep stops in one line, no target is tried
        if not self.top.root.is_dir():
            raise ModuleNotLoaded(f"module not loaded ({self.top.root} does not exist)",
                                  "load the pmemlab.ko of this tree: insmod build/$(uname -r)/pmemlab.ko "
                                  "(target= is not needed), or point --sysfs / PMEMLAB_SYSFS at it")
        if not (self.top.root / TARGETS_DIR).is_dir():
            raise ModuleNotLoaded(f"the loaded module has no named targets ({self.top.root / TARGETS_DIR} does not "
                                  "exist): it is older than this tree",
                                  "rmmod pmemlab, then insmod build/$(uname -r)/pmemlab.ko of this tree")
        name = load.named or target_name(load.label)
        mod = self.module(name)
        if mod.root.is_dir():
            differs = "" if load.named else _differs(load, mod)
            if differs:
                raise LoadRefused(f"the module's target {name} is not {load.text()}: {differs}",
                                  f"remove it (echo {name} > {self.top.root / TARGETS_DIR / 'remove'}) or give the "
                                  "target another label")
            return mod
        if load.named:
            raise LoadRefused(f"the module holds no target named {name}",
                              f"add it: echo '{name} dram' > {self.top.root / TARGETS_DIR / 'add'} (or a /dev/pmemN)")
        other = [k for k, _ in load.params if k != "target" and k not in MODULE_KEYS]
        if other:
            raise LoadRefused(f"{load.text()}: {', '.join(other)} is not a key of a module target",
                              f"the module's keys: {', '.join(MODULE_KEYS)}; the others are the user backend's")
        line = " ".join([name, load.target, *(f"{k}={v}" for k, v in load.params if k != "target")])
        try:
            self.top.io.write(self.top.root / TARGETS_DIR / "add", line + "\n")
        except OSError as exc:
            why = self.top.read_opt("last_error") or exc.strerror or str(exc)
            fix = ("wait until no run is active on the module (pmemlab abort ends one), then run this again"
                   if "between runs" in why else
                   "check the target (pmemlab info, ndctl list) and its keys (docs/interface.md)")
            raise LoadRefused(f"targets/add {line} refused: {why.removeprefix('targets/add: ')}", fix) from None
        self.added.append(name)
        return mod

    def close(self) -> None:
        """Remove the targets this loader added (a refusal is told, not raised: it runs in `finally`)."""
        for name in reversed(self.added):
            try:
                self.top.io.write(self.top.root / TARGETS_DIR / "remove", name + "\n")
            except OSError as exc:
                why = self.top.read_opt("last_error") or exc.strerror
                print(f"pmemlab: the target {name} added for the sweep stays: {why}", file=self.log or sys.stderr)
        self.added.clear()


def _differs(load: TargetLoad, mod: Module) -> str:
    """How the named target found differs from the load asked ('' when it does not, as far as
    its facts tell)."""
    facts = {k: str(v) for k, v in mod.facts().items()}
    if facts.get("target") != load.target:
        return f"it is target {facts.get('target')}"
    for key, value in load.options.items():
        fact = FACT_OF_KEY.get(key, "")
        want = str(P.parse_size(value)) if key in ("dram_size", "dram_pages") else value
        if fact and facts.get(fact) not in (None, "", want):
            return f"its {fact} is {facts[fact]}, not {key}={value}"
    return ""


class UserLoader:
    """Re-points the user backend (pmemlab-run) at each target, with the options given beside it
    on the command line under the load's own."""

    kind: BackendKind = "user"

    def __init__(self, options: Mapping[str, str] | None = None) -> None:
        self.options = dict(options or {})

    def open(self, load: TargetLoad) -> Backend:
        try:
            backend = BackendSpec("user", target=load.target, options={**self.options, **load.options}).open()
            backend.facts()
        except PmemlabError as exc:
            raise LoadRefused(exc.cause, exc.fix) from None
        return backend

    def close(self) -> None:
        """Nothing stays open between runs of the runner."""


def open_loader(kind: str, sysfs: str | None, backend_opts: Mapping[str, str] | None = None) -> Loader:
    """The loader of a backend: the module's named targets under --sysfs (else the real module),
    or the runner re-pointed with the user backend's options (--set size=...)."""
    opts = dict(backend_opts or {})
    if kind == "user":
        return UserLoader({k: v for k, v in opts.items() if k in TARGET_KEYS and k not in ("backend", "target")})
    if set(opts) - {"backend"}:
        raise ConfigError(f"{', '.join(sorted(set(opts) - {'backend'}))}: options of backend=user",
                          "on the module, give them in the target's load: --targets 'dram=dram dram_size=1G'")
    return NamedTargets(sysfs_root(sysfs))


def is_name(text: str | None) -> bool:
    """A name of a named target (not a path, not dram)."""
    return bool(text) and text != "dram" and bool(NAME_RE.fullmatch(text or ""))

"""The target axis: which targets one command measures, and opening each in turn.

A target load is what the backend is opened with (`target=dram dram_size=256M dram_node=1`,
`target=/dev/pmem0`) under a label (pmem, dram, dram-2m, ...). A config declares its loads
([sweep.targets], with the placeholders @PMEM@, @PMEM_DRAM@ and @CPULESS_NODE@ for what differs
between machines); `--targets` chooses among them or names others. Opening a load: the kernel
backend unloads pmemlab.ko and loads it again with the load's parameters (the .ko built for the
running kernel); the user backend is re-pointed (pmemlab-run gets the load's target and options).
The kernel loader puts back what was loaded before when the command ends.

A load this machine cannot have (a placeholder with nothing to fill it, a DRAM node without
memory) is `unavailable`: its points are recorded as skipped with the reason, not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from pmemlab.host import machine, probe
from pmemlab.backends.protocol import Backend, BackendKind
from pmemlab.backends.spec import BackendSpec
from pmemlab.config.model import SweepConfig
from pmemlab.config.targets import PMEM_DRAM_PLACEHOLDER, PMEM_PLACEHOLDER
from pmemlab.errors import ConfigError, PmemlabError
from pmemlab.backends.module import DEFAULT_SYSFS, Module, module_path, sysfs_root

CPULESS_NODE_PLACEHOLDER = "@CPULESS_NODE@"
LOADED = "loaded"  # --targets loaded: the module as it is loaded now, no target axis
# labels that mean a target on every machine where the config does not declare them
WELL_KNOWN = {"pmem": f"target={PMEM_PLACEHOLDER}", "emulated": f"target={PMEM_DRAM_PLACEHOLDER}"}
LABEL_RE = re.compile(r"[A-Za-z0-9_.\-]+")
# keys of a load that are load parameters, never labels (`--targets target=dram` has no label)
LOAD_KEYS = frozenset({"target", "dram_size", "dram_node", "dram_nodes", "dram_weights", "dram_pages",
                       "allow_overwrite", "dram_node_strict", "size", "allow_file", "tsc_khz"})


@dataclass(frozen=True)
class TargetLoad:
    """One target of the axis: its label and load parameters (target first), or why this
    machine cannot have it."""

    label: str
    params: tuple[tuple[str, str], ...]
    unavailable: str = ""

    @property
    def target(self) -> str:
        return dict(self.params).get("target", "")

    @property
    def options(self) -> dict[str, str]:
        """The load parameters but the target."""
        return {k: v for k, v in self.params if k != "target"}

    def args(self) -> list[str]:
        """insmod's KEY=VALUE arguments."""
        return [f"{k}={v}" for k, v in self.params]

    def text(self) -> str:
        return " ".join(self.args())


def parse_load(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """`target=dram dram_size=1G`, `dram dram_pages=2m`, `/dev/pmem0`, `dram:1` -> load parameters,
    target first (`dram:N` is target=dram dram_node=N, the user backend's spelling)."""
    words = text.split()
    if not words:
        raise ConfigError(f"{where}: an empty target", "give e.g. dram, /dev/pmem0 or target=dram dram_size=1G")
    params: dict[str, str] = {}
    for i, word in enumerate(words):
        key, eq, value = word.partition("=")
        if not eq:
            if i or "target" in params:
                raise ConfigError(f"{where}: {word!r} is not KEY=VALUE", "only the first word may be a bare target")
            key, value = "target", word
        if not re.fullmatch(r"[a-z_]+", key) or not value:
            raise ConfigError(f"{where}: {word!r} is not KEY=VALUE", "e.g. dram_size=1G")
        params[key] = value
    if "target" not in params:
        raise ConfigError(f"{where}: {text!r} names no target", "give target=/dev/pmemN, target=dram or a bare target")
    m = re.fullmatch(r"dram:(\d+)", params["target"])
    if m:
        params["target"] = "dram"
        params.setdefault("dram_node", m.group(1))
    return (("target", params.pop("target")), *params.items())


def derived_label(params: Sequence[tuple[str, str]]) -> str:
    """A label for a load given without one: dram, dram-node1, dram-2m, pmem0, pmem, emulated."""
    p = dict(params)
    target = p.get("target", "")
    if target == "dram":
        label = "dram"
        if "dram_node" in p:
            label += f"-node{p['dram_node']}"
        if "dram_nodes" in p:  # dram-nodes0.1-w3.1: a label has no commas
            label += f"-nodes{p['dram_nodes'].replace(',', '.')}"
        if "dram_weights" in p:
            label += f"-w{p['dram_weights'].replace(',', '.')}"
        if "dram_pages" in p:
            label += f"-{p['dram_pages']}"
        return label
    if target == PMEM_PLACEHOLDER:
        return "pmem"
    if target == PMEM_DRAM_PLACEHOLDER:
        return "emulated"
    name = Path(target).name
    return re.sub(r"[^A-Za-z0-9_.\-]", "-", Path(name).stem or name) or "target"


def declared_loads(cfg: SweepConfig | None) -> list[TargetLoad]:
    """The loads a config declares ([sweep.targets]; none: an empty list)."""
    if cfg is None:
        return []
    return [TargetLoad(label, parse_load(args, f"sweep.targets.{label}")) for label, args in cfg.targets.items()]


def parse_targets_option(text: str, declared: Sequence[TargetLoad] = ()) -> list[TargetLoad]:
    """`--targets`: comma-separated items, each `LABEL=LOAD`, a label the config declares, `pmem`
    (@PMEM@) or `emulated` (@PMEM_DRAM@), or a LOAD alone (labelled after its target):
    `pmem=/dev/pmem0,dram`, `pmem,dram-2m`, `dram-4k=dram dram_pages=4k,dram-2m=dram dram_pages=2m`."""
    by_label = {label: TargetLoad(label, parse_load(load, label)) for label, load in WELL_KNOWN.items()}
    by_label.update({t.label: t for t in declared})
    out: list[TargetLoad] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ConfigError(f"--targets {text!r}: an empty item", "separate targets with single commas")
        head, eq, rest = item.partition("=")
        if eq and LABEL_RE.fullmatch(head) and head not in LOAD_KEYS:
            out.append(TargetLoad(head, parse_load(rest, f"--targets {head}")))
        elif item in by_label:
            out.append(by_label[item])
        else:
            params = parse_load(item, "--targets")
            out.append(TargetLoad(derived_label(params), params))
    labels = [t.label for t in out]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"--targets: the label {twice[0]} names two targets", "give each target its own LABEL=")
    return out


# --------------------------------------------------------------------------
# what the placeholders stand for on this machine
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Substitutes:
    """The fsdax namespace (@PMEM@), the one on DRAM (@PMEM_DRAM@, memmap=), the first NUMA node
    with memory and no CPUs (@CPULESS_NODE@), and the machine's nodes with memory; None: this
    machine has none."""

    pmem: str | None = None
    pmem_dram: str | None = None
    cpuless_node: str | None = None
    memory_nodes: frozenset[int] | None = None  # None: unknown (no check)

    @classmethod
    def probe(cls, pmem: str | None = None, pmem_dram: str | None = None,
              host: probe.HostPaths | None = None) -> Substitutes:
        """--pmem / --pmem-dram, else the first of $PMEMLAB_PMEM / $PMEMLAB_PMEM_DRAM (scripts/vm
        sets them in the guest), else /dev/pmem0 if it exists; the nodes from sysfs."""
        host = host or probe.HostPaths()
        pmem = pmem or _first_word(os.environ.get("PMEMLAB_PMEM"))
        if not pmem and (host.dev / "pmem0").exists():
            pmem = str(host.dev / "pmem0")
        pmem_dram = pmem_dram or _first_word(os.environ.get("PMEMLAB_PMEM_DRAM"))
        nodes = machine.numa_info(host)["nodes"]
        with_memory = frozenset(n["node"] for n in nodes if (n.get("mem_total_kib") or 0) > 0)
        cpuless = next((str(n["node"]) for n in nodes if n["node"] in with_memory and not (n.get("cpus") or "").strip()),
                       None)
        return cls(pmem=pmem, pmem_dram=pmem_dram, cpuless_node=cpuless, memory_nodes=with_memory or None)

    def resolve(self, load: TargetLoad) -> TargetLoad:
        """The load with its placeholders filled, or unavailable with the reason."""
        fills = {PMEM_PLACEHOLDER: (self.pmem, "no fsdax namespace for @PMEM@ (give --pmem DEV or set PMEMLAB_PMEM)"),
                 PMEM_DRAM_PLACEHOLDER: (self.pmem_dram, "no DRAM-emulated fsdax namespace for @PMEM_DRAM@ (give "
                                         "--pmem-dram DEV or set PMEMLAB_PMEM_DRAM; scripts/vm --memmap makes one)"),
                 CPULESS_NODE_PLACEHOLDER: (self.cpuless_node, "no CPU-less NUMA node for @CPULESS_NODE@ (CXL memory "
                                            "appears as one)")}
        params = []
        for key, value in load.params:
            for mark, (fill, why) in fills.items():
                if mark in value:
                    if fill is None:
                        return replace(load, unavailable=why)
                    value = value.replace(mark, fill)
            params.append((key, value))
        p = dict(params)
        for key in ("dram_node", "dram_nodes"):
            for node in (p.get(key) or "").split(","):
                if (p.get("target") == "dram" and node.isdigit() and self.memory_nodes is not None
                        and int(node) not in self.memory_nodes):
                    return replace(load, params=tuple(params),
                                   unavailable=f"no NUMA node {node} with memory on this machine ({key}={p[key]})")
        return replace(load, params=tuple(params))


def _first_word(text: str | None) -> str | None:
    words = (text or "").split()
    return words[0] if words else None


def choose_loads(cfg: SweepConfig | None, option: str | None, subs: Substitutes) -> list[TargetLoad] | None:
    """The target axis of a command: --targets, else the config's [sweep.targets]; None when
    there is none (--targets loaded, or neither): the backend as it is opened now."""
    if option is not None and option.strip() == LOADED:
        return None
    declared = declared_loads(cfg)
    loads = parse_targets_option(option, declared) if option is not None else declared
    return [subs.resolve(load) for load in loads] or None


# --------------------------------------------------------------------------
# opening a load
# --------------------------------------------------------------------------
class LoadRefused(PmemlabError):
    """The backend could not be opened on a target (insmod refused it, the runner cannot map it)."""


class Loader(Protocol):
    """Opens the backend on one target after another."""

    @property
    def kind(self) -> BackendKind:
        """The backend it opens."""

    def open(self, load: TargetLoad) -> Backend:
        """The backend running on `load` (raises LoadRefused when it cannot)."""

    def close(self) -> None:
        """Put back what was there before the first open."""


class ModuleCommands(Protocol):
    """What reloading pmemlab.ko needs from the system (tests give a fake module's)."""

    def parameters(self) -> dict[str, str] | None:
        """Load parameters of the loaded module; None when it is not loaded."""

    def unload(self) -> None:
        """rmmod pmemlab."""

    def load(self, ko: Path, args: Sequence[str]) -> None:
        """insmod KO ARGS...; raises LoadRefused with the module's reason."""


class SystemModuleCommands:
    """rmmod and insmod; the module's reason for a refusal from the kernel log."""

    def __init__(self, modparams: Path = Path("/sys/module/pmemlab/parameters")) -> None:
        self.modparams = modparams

    def parameters(self) -> dict[str, str] | None:
        if not self.modparams.parent.exists():
            return None
        out: dict[str, str] = {}
        for path in sorted(self.modparams.glob("*")):
            try:
                out[path.name] = path.read_text().strip()
            except OSError:
                continue
        return out

    def unload(self) -> None:
        res = subprocess.run(["rmmod", "pmemlab"], capture_output=True, text=True)
        if res.returncode != 0 and self.modparams.parent.exists():
            raise PmemlabError(f"rmmod pmemlab failed: {_last_line(res.stderr) or res.returncode}",
                               "wait for the active run to end (`pmemlab abort`) and close what uses the module")

    def load(self, ko: Path, args: Sequence[str]) -> None:
        before = len(_kernel_log())
        res = subprocess.run(["insmod", str(ko), *args], capture_output=True, text=True)
        if res.returncode == 0:
            return
        said = [line for line in _kernel_log()[before:] if "pmemlab: " in line]
        reason = said[-1].split("pmemlab: ", 1)[1] if said else _last_line(res.stderr)
        raise LoadRefused(f"insmod {' '.join(args)} refused: {reason}",
                          "check the target (pmemlab info, ndctl list) and the load parameters (docs/interface.md)")


def _kernel_log() -> list[str]:
    try:
        return subprocess.run(["dmesg"], capture_output=True, text=True, timeout=20).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return []


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def kernel_object(option: str | None = None) -> Path:
    """The pmemlab.ko to load: --ko, else $PMEMLAB_KO, else the build for the running kernel."""
    path = Path(option or os.environ.get("PMEMLAB_KO") or module_path())
    if not path.is_file():
        raise PmemlabError(f"no module to load targets with: {path} does not exist",
                           "make module (builds build/$(uname -r)/pmemlab.ko), or give --ko PATH")
    return path


class KernelLoader:
    """Opens the module on a target by unloading and loading it; `close` loads it again as it
    was before (or leaves it unloaded if it was)."""

    kind: BackendKind = "kernel"

    def __init__(self, ko: Path, root: Path | None = None, commands: ModuleCommands | None = None,
                 module: Module | None = None, settle_s: float = 5.0) -> None:
        self.ko = ko
        self.commands = commands or SystemModuleCommands()
        self.module = module or Module(root if root is not None else sysfs_root())
        self.settle_s = settle_s
        self.before: dict[str, str] | None = None
        self.current: tuple[tuple[str, str], ...] | None = None
        self._opened = False

    def open(self, load: TargetLoad) -> Backend:
        if not self._opened:
            self.before = self.commands.parameters()
            self._opened = True
        self.commands.unload()
        self.current = None
        self.commands.load(self.ko, load.args())
        self.current = load.params
        deadline = time.monotonic() + self.settle_s
        while not self.module.loaded() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.module.require_loaded()
        return self.module

    def close(self) -> None:
        if not self._opened:
            return
        self._opened = False
        if self.before is None:
            self.commands.unload()
            return
        params = tuple((k, v) for k, v in self.before.items() if v != "")
        if self.current is not None and dict(self.current) == dict(params):
            return
        self.commands.unload()
        self.commands.load(self.ko, [f"{k}={v}" for k, v in params])


class UserLoader:
    """Re-points the user backend (pmemlab-run) at each target, with the options given beside it
    on the command line under the load's own."""

    kind: BackendKind = "user"

    def __init__(self, options: Mapping[str, str] | None = None) -> None:
        self.options = dict(options or {})

    def open(self, load: TargetLoad) -> Backend:
        backend = BackendSpec("user", target=load.target, options={**self.options, **load.options}).open()
        try:
            backend.facts()
        except PmemlabError as exc:
            raise LoadRefused(exc.cause, exc.fix) from None
        return backend

    def close(self) -> None:
        """Nothing stays open between runs of the runner."""


def kernel_loader(ko_option: str | None, sysfs: Path | None) -> KernelLoader:
    """The loader of the real module: root, the .ko for the running kernel, the real sysfs."""
    root = sysfs_root(sysfs)
    if root != DEFAULT_SYSFS:
        raise PmemlabError(f"targets are loaded into the real module only, not {root}",
                           "drop --sysfs / PMEMLAB_SYSFS, or give --targets loaded")
    if os.geteuid() != 0:
        raise PmemlabError("loading pmemlab.ko on each target needs root",
                           "run as root (sudo pmemlab ...), or --targets loaded to measure the module as it is loaded")
    return KernelLoader(kernel_object(ko_option), root)


@dataclass
class TargetPlan:
    """The loads of one command and the loader that opens them."""

    loads: list[TargetLoad]
    loader: Loader
    notes: list[str] = field(default_factory=list)

    def describe(self) -> list[dict[str, Any]]:
        return [{"label": t.label, "load": t.text(), **({"unavailable": t.unavailable} if t.unavailable else {})}
                for t in self.loads]

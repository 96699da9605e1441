"""What a target is and how it is named: a load (`target=dram dram_size=256M dram_node=1`,
`target=/dev/pmem0`) under a label (pmem, dram, dram-2m, ...), parsed from `--targets` and a
config's [sweep.targets] (with the placeholders @PMEM@, @PMEM_DRAM@ and @CPULESS_NODE@ for what
differs between machines), filled on this machine, and the name of the module's named target
(/sys/kernel/pmemlab/targets/<name>) it becomes.

A load this machine cannot have (a placeholder with nothing to fill it, a DRAM node without
memory) is `unavailable`: its points are recorded as skipped with the reason, not run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from pmemlab.host import machine, probe
from pmemlab.errors import ConfigError

PMEM_PLACEHOLDER = "@PMEM@"
PMEM_DRAM_PLACEHOLDER = "@PMEM_DRAM@"
CPULESS_NODE_PLACEHOLDER = "@CPULESS_NODE@"
LOADED = "loaded"  # --targets loaded: the module as it is loaded now, no target axis
# labels that mean a target on every machine where the config does not declare them
WELL_KNOWN = {"pmem": f"target={PMEM_PLACEHOLDER}", "emulated": f"target={PMEM_DRAM_PLACEHOLDER}"}
LABEL_RE = re.compile(r"[A-Za-z0-9_.\-]+")
NAME_RE = re.compile(r"[a-z0-9_-]{1,31}")  # a named target of the module (docs/interface.md)
# the keys of a named target's line (targets/add); the others (size, allow_file, tsc_khz) are the runner's
MODULE_KEYS = ("dram_size", "dram_node", "dram_nodes", "dram_weights", "dram_pages", "dram_node_strict",
               "allow_overwrite")
# keys of a load that are load parameters, never labels (`--targets target=dram` has no label)
LOAD_KEYS = frozenset({"target", *MODULE_KEYS, "size", "allow_file", "tsc_khz"})


class Declares(Protocol):
    """A config, as far as its targets go ([sweep.targets]: label -> load)."""

    targets: dict[str, str]


def target_loads(cfg: Declares, pmem: str, pmem_dram: str | None = None) -> list[tuple[str, str]]:
    """(label, load) of every target a config compares (`pmemlab targets`); @PMEM@ -> `pmem`,
    @PMEM_DRAM@ -> `pmem_dram` when given, else left."""
    out = []
    for label, args in (cfg.targets or {"pmem": f"target={PMEM_PLACEHOLDER}"}).items():
        args = args.replace(PMEM_PLACEHOLDER, pmem)
        out.append((label, args.replace(PMEM_DRAM_PLACEHOLDER, pmem_dram) if pmem_dram else args))
    return out


def target_name(label: str) -> str:
    """The module's name for the target of a label: the label where it is a name
    ([a-z0-9_-]{1,31}), else lower case with any other character as '-', cut to 31."""
    return label if NAME_RE.fullmatch(label) else re.sub(r"[^a-z0-9_-]", "-", label.lower())[:31]


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
        """Its KEY=VALUE words, target first (the sidecar's `load`, `pmemlab targets`)."""
        return [f"{k}={v}" for k, v in self.params]

    def text(self) -> str:
        return " ".join(self.args())

    @property
    def named(self) -> str:
        """The name of a named target the module holds already when the load is only that name
        (`--targets cxl`, `--target cxl`), else ''."""
        target = self.target
        return target if len(self.params) == 1 and target != "dram" and NAME_RE.fullmatch(target) else ""


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


def declared_loads(declared: Mapping[str, str]) -> list[TargetLoad]:
    """The loads of a config's [sweep.targets] (label = load)."""
    return [TargetLoad(label, parse_load(args, f"sweep.targets.{label}")) for label, args in declared.items()]


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


def choose_loads(targets: Mapping[str, str], option: str | None, subs: Substitutes) -> list[TargetLoad] | None:
    """The target axis of a command: --targets, else the config's [sweep.targets] (`targets`);
    None when there is none (--targets loaded, or neither): the backend as it is opened now."""
    if option is not None and option.strip() == LOADED:
        return None
    declared = declared_loads(targets)
    loads = parse_targets_option(option, declared) if option is not None else declared
    return [subs.resolve(load) for load in loads] or None



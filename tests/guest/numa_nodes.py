"""The guest's NUMA nodes as the tests that place memory on two of them pick them (test_tiers.py,
test_curves.py): the DRAM node is CPU 0's; the other is $PMEMLAB_CXL_NODE (the CXL ram lane's
node, where the bed has one), else the first node with memory and no CPUs (scripts/vm
--cpuless-node: make test's first guest), else another node with memory (--numa-nodes 2: its
last guest); one node with memory: the test is skipped."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

NODE = Path("/sys/devices/system/node")


def node_of_cpu0() -> int:
    return next(int(p.name[4:]) for p in NODE.glob("node[0-9]*") if (p / "cpu0").exists())


def memory_nodes() -> dict[int, str]:
    """node -> its CPU list, for every node with memory."""
    out = {}
    for p in sorted(NODE.glob("node[0-9]*")):
        mem = re.search(r"MemTotal:\s+(\d+)", (p / "meminfo").read_text())
        if mem and int(mem.group(1)) > 0:
            out[int(p.name[4:])] = (p / "cpulist").read_text().strip()
    return out


def two_memory_nodes() -> tuple[int, int]:
    """(CPU 0's node, the other node with memory), as the module docstring says."""
    dram, nodes = node_of_cpu0(), memory_nodes()
    env = os.environ.get("PMEMLAB_CXL_NODE")
    if env:
        assert int(env) in nodes and int(env) != dram, f"PMEMLAB_CXL_NODE={env}: not another node with memory"
        return dram, int(env)
    others = sorted((bool(cpus), n) for n, cpus in nodes.items() if n != dram)  # CPU-less first
    if not others:
        pytest.skip("one NUMA node with memory (scripts/vm --cpuless-node SIZE or --numa-nodes 2 give two)")
    return dram, others[0][1]

"""The `hypervisor` and `target_emulated` conditions: detected from fixture /sys trees and tool
output (bare metal, a QEMU guest, a memmap= namespace, the kernel's nfit_test bus), written into
every CSV row by a sweep, and derived from the sidecars of results recorded before they existed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from fake_pmemlab import make_fake

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab.table import CONDITION_COLUMNS

from testlib import HOST_FIXTURES

RECORDED = HOST_FIXTURES / "recorded"
FLAGS = "fpu sse2 avx clflush clwb rdtscp"


def make_host(root: Path, *, flag: bool, dmi_vendor: str | None = None, provider: str | None = None,
              xen: str | None = None) -> probe.HostPaths:
    """A /proc and /sys tree: cpuinfo (with or without the hypervisor flag), DMI, and /dev/pmem0's
    device link into an NVDIMM bus whose provider is `provider` (the fsdax pfn device, as on 6.1)."""
    proc, sysd = root / "proc", root / "sys"
    proc.mkdir(parents=True)
    (proc / "cpuinfo").write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: {FLAGS}"
                                  f"{' hypervisor' if flag else ''}\n")
    (sysd / "devices/system/cpu").mkdir(parents=True)
    (sysd / "devices/system/cpu/online").write_text("0\n")
    if dmi_vendor is not None:
        (sysd / "class/dmi/id").mkdir(parents=True)
        (sysd / "class/dmi/id/sys_vendor").write_text(dmi_vendor + "\n")
    if xen is not None:
        (sysd / "hypervisor").mkdir(parents=True)
        (sysd / "hypervisor/type").write_text(xen + "\n")
    if provider is not None:
        bus = sysd / "devices/platform/bus0/ndbus0"
        pfn = bus / "region0/pfn0.0"
        pfn.mkdir(parents=True)
        (bus / "provider").write_text(provider + "\n")
        (sysd / "class/block/pmem0").mkdir(parents=True)
        os.symlink(os.path.relpath(pfn, sysd / "class/block/pmem0"), sysd / "class/block/pmem0/device")
    return probe.HostPaths(proc=proc, sys=sysd, dev=root / "dev")


def tools(virt: str | None):
    """systemd-detect-virt prints the hypervisor (exit 0) or 'none' (exit 1); no other tool."""
    def run(argv):
        if argv[0] == "systemd-detect-virt":
            return probe.ToolResult(0, virt + "\n") if virt else probe.ToolResult(1, "none\n")
        return probe.ToolResult(127, "", "not installed")
    return run


CASES = {
    # name: host tree, systemd-detect-virt, target kind -> hypervisor, target_emulated
    "bare metal Optane": (dict(flag=False, dmi_vendor="Intel Corporation", provider="ACPI.NFIT"), None, "fsdax",
                          "none", "no"),
    "QEMU guest NVDIMM": (dict(flag=True, dmi_vendor="QEMU", provider="ACPI.NFIT"), "qemu", "fsdax",
                          "qemu", "virtual-nvdimm"),
    "KVM without DMI": (dict(flag=True, provider="ACPI.NFIT"), "kvm", "fsdax", "kvm", "virtual-nvdimm"),
    "memmap= on bare metal": (dict(flag=False, provider="e820"), None, "fsdax", "none", "memmap"),
    "memmap= in a guest": (dict(flag=True, dmi_vendor="QEMU", provider="e820"), "qemu", "fsdax", "qemu", "memmap"),
    "nfit_test": (dict(flag=False, provider="nfit_test.0"), None, "fsdax", "none", "nfit_test"),
    "Xen guest, DMI only": (dict(flag=False, xen="xen", provider="ACPI.NFIT"), None, "fsdax", "xen",
                            "virtual-nvdimm"),
    "CPUID bit only": (dict(flag=True, provider="ACPI.NFIT"), None, "fsdax", "unknown", "virtual-nvdimm"),
    "DRAM target in a guest": (dict(flag=True, dmi_vendor="QEMU"), "qemu", "dram", "qemu", "dram"),
    "DRAM target, bare metal": (dict(flag=False), None, "dram", "none", "dram"),
    "no NVDIMM bus found": (dict(flag=False), None, "fsdax", "none", "unknown"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conditions_detect_hypervisor_and_emulated_namespace(tmp_path, case):
    tree, virt, kind, hypervisor, emulated = CASES[case]
    host = make_host(tmp_path, **tree)
    fake = make_fake(tmp_path / "fake", target="dram" if kind == "dram" else "/dev/pmem0", target_kind=kind)
    info = machine.gather_info(fake.module(), host, runner=tools(virt))
    cond = machine.conditions(info)
    assert (cond["hypervisor"], cond["target_emulated"]) == (hypervisor, emulated)
    assert info["target"]["nd_provider"] == (tree.get("provider") if kind != "dram" else None)
    if hypervisor != "none":
        assert info["hypervisor"]["evidence"], "the evidence is kept for `pmemlab info`"
    text = machine.format_info(info)
    assert f"hypervisor             {hypervisor}" in text and f"target emulated        {emulated}" in text


def test_provider_of_a_file_on_a_dax_file_system(tmp_path):
    """A file target (user backend) is traced through its st_dev to the block device's bus."""
    host = make_host(tmp_path / "h", flag=False, provider="e820")
    data = tmp_path / "data"
    data.write_bytes(b"x")
    st = os.stat(data)
    link = host.sys / f"dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    link.parent.mkdir(parents=True)
    os.symlink(host.sys / "devices/platform/bus0/ndbus0/region0/pfn0.0", link)
    assert machine.nd_provider(str(data), host) == "e820"
    assert machine.nd_provider("dram", host) is None and machine.nd_provider("/dev/pmem9", host) is None


def test_sweep_writes_the_columns_into_every_row(tmp_path, monkeypatch):
    host = make_host(tmp_path / "h", flag=True, dmi_vendor="QEMU", provider="ACPI.NFIT")
    fake = make_fake(tmp_path / "fake")
    monkeypatch.setattr(cli_backend, "module", lambda args: fake.module())
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: 2)
    monkeypatch.setattr(probe, "run_tool", tools("qemu"))
    real_gather = machine.gather_info
    monkeypatch.setattr(machine, "gather_info", lambda mod, *a, **k: real_gather(mod, host, *a[1:], **k))
    cfg = tmp_path / "c.toml"
    cfg.write_text('[base]\nduration_ms = 1\n[axes]\naccess_size = [64, 256]\n')
    out = tmp_path / "c.csv"
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    df = pd.read_csv(out, dtype=str)
    assert {"hypervisor", "target_emulated"} <= set(CONDITION_COLUMNS) <= set(df.columns)
    assert (df["hypervisor"] == "qemu").all() and (df["target_emulated"] == "virtual-nvdimm").all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["conditions"]["hypervisor"] == "qemu"


EXPECTED_FROM_SIDECARS = {"pmem": "virtual-nvdimm", "emulated": "memmap", "dram": "dram", "dram-4k": "dram",
                          "dram-2m": "dram", "dram-remote": "dram", "dram-cpuless": "dram"}


@pytest.mark.parametrize("sidecar", sorted(RECORDED.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_sidecars_give_the_columns_of_their_rows(sidecar):
    """Each target's facts in the recorded sidecars (the machine's, with the target's own) give by
    machine.emulation_conditions the hypervisor and target_emulated its rows carry (the TCG guest:
    qemu; a virtual NVDIMM, the memmap= namespace, DRAM); and without the facts detected since the
    first recordings (the hypervisor detection, the NVDIMM bus provider), as results recorded
    before them hold: the CPUID bit and the ndctl region still say hypervisor and emulated."""
    side = json.loads(sidecar.read_text())
    rows = pd.read_csv(sidecar.with_suffix(".csv"), dtype=str)
    for label, target in side["targets"].items():
        facts = {**side["machine"], "target": target["target"]}
        cond = machine.emulation_conditions(facts)
        ran = rows[(rows["target_label"] == label) & (rows["status"] == "ok")]
        assert ran[["hypervisor", "target_emulated"]].drop_duplicates().to_dict("records") == [cond], label
        assert cond == {"hypervisor": "qemu", "target_emulated": EXPECTED_FROM_SIDECARS[label]}
        before = {k: v for k, v in facts.items() if k != "hypervisor"}
        before["target"] = {k: v for k, v in target["target"].items() if k != "nd_provider"}
        assert machine.emulation_conditions(before) == {"hypervisor": "unknown",
                                                        "target_emulated": EXPECTED_FROM_SIDECARS[label]}

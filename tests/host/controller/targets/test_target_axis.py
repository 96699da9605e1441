"""The target axis: `--targets` and [sweep.targets] parsed and filled, each target a named target
of the module (the fake module's targets/add and targets/remove: added when absent, found when
present, removed after only when the sweep added it, never a reload), one CSV with a target_label
column, resume per target, targets that cannot be opened, the user backend re-pointed for real,
and the figures reading the one-CSV form."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from textwrap import dedent

import pandas as pd
import pytest

from fake_pmemlab import make_fake
from sweep_toml import bandwidth_toml
from recorded_targets import RECORDED, one_target

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab import exitcodes
from pmemlab.host import taskstats
from pmemlab.cli import target_axis as targets_cli
from pmemlab.config import parse_config
from pmemlab.errors import ConfigError, ModuleNotLoaded
from pmemlab.analysis.resultset import load_results
from pmemlab.table import read_rows
from pmemlab.targets.open import LoadRefused, NamedTargets, open_loader
from pmemlab.targets.spec import Substitutes, TargetLoad, choose_loads, parse_load, parse_targets_option
from pmemlab.targets.spec import target_name

CONFIG = bandwidth_toml('op = ["load", "ntstore"]\naccess_size = [64, 256]', name="cmp", sweep='''
[sweep.targets]
pmem = "target=@PMEM@"
dram = "target=dram dram_size=64M"
emulated = "target=@PMEM_DRAM@"
''')


# --------------------------------------------------------------------------
# what a target is
# --------------------------------------------------------------------------
def test_a_load_is_its_parameters_target_first():
    assert parse_load("target=dram dram_size=1G", "x") == (("target", "dram"), ("dram_size", "1G"))
    assert parse_load("dram_size=1G target=dram", "x") == (("target", "dram"), ("dram_size", "1G"))
    assert parse_load("dram dram_pages=2m", "x") == (("target", "dram"), ("dram_pages", "2m"))
    assert parse_load("dram:1", "x") == (("target", "dram"), ("dram_node", "1"))
    assert parse_load("/dev/pmem1", "x") == (("target", "/dev/pmem1"),)
    for bad, what in (("", "empty"), ("dram dram", "not KEY=VALUE"), ("dram_size=1G", "names no target"),
                      ("target=dram X=1", "not KEY=VALUE")):
        with pytest.raises(ConfigError, match=what):
            parse_load(bad, "--targets")


def test_targets_option_labels_choices_and_bare_targets():
    declared = [TargetLoad("pmem", (("target", "@PMEM@"),)), TargetLoad("dram", (("target", "dram"),
                                                                                  ("dram_size", "64M")))]
    loads = parse_targets_option("pmem=/dev/pmem0,dram", declared)
    assert [(t.label, t.text()) for t in loads] == [("pmem", "target=/dev/pmem0"), ("dram", "target=dram dram_size=64M")]
    loads = parse_targets_option("dram-4k=dram dram_pages=4k,dram-2m=dram dram_pages=2m,/dev/pmem3,dram:1,"
                                 "target=dram dram_node=0 dram_pages=4k")
    assert [t.label for t in loads] == ["dram-4k", "dram-2m", "pmem3", "dram-node1", "dram-node0-4k"]
    assert loads[3].text() == "target=dram dram_node=1"
    loads = parse_targets_option("pmem,emulated,dram")  # what they mean where a config does not declare them
    assert [t.text() for t in loads] == ["target=@PMEM@", "target=@PMEM_DRAM@", "target=dram"]
    with pytest.raises(ConfigError, match="the label dram-2m names two targets"):
        parse_targets_option("dram-2m=dram dram_pages=2m,dram dram_pages=2m")
    with pytest.raises(ConfigError, match="empty item"):
        parse_targets_option("dram,,pmem")


def test_placeholders_are_filled_or_the_target_is_unavailable():
    subs = Substitutes(pmem="/dev/pmem0", pmem_dram=None, cpuless_node="2", memory_nodes=frozenset({0, 2}))
    resolved = [subs.resolve(t) for t in (
        TargetLoad("pmem", (("target", "@PMEM@"),)),
        TargetLoad("emulated", (("target", "@PMEM_DRAM@"),)),
        TargetLoad("cxl", (("target", "dram"), ("dram_node", "@CPULESS_NODE@"))),
        TargetLoad("remote", (("target", "dram"), ("dram_node", "1"))),
    )]
    assert resolved[0].text() == "target=/dev/pmem0" and not resolved[0].unavailable
    assert resolved[1].unavailable.startswith("no DRAM-emulated fsdax namespace for @PMEM_DRAM@")
    assert resolved[2].text() == "target=dram dram_node=2" and not resolved[2].unavailable
    assert resolved[3].unavailable == "no NUMA node 1 with memory on this machine (dram_node=1)"
    assert Substitutes().resolve(TargetLoad("cxl", (("target", "dram"), ("dram_node", "@CPULESS_NODE@")))
                                 ).unavailable.startswith("no CPU-less NUMA node")


def test_substitutes_from_the_environment_and_the_nodes(tmp_path, monkeypatch):
    nodes = tmp_path / "sys" / "devices/system/node"
    for n, cpus, kib in ((0, "0-1", 1024), (1, "", 2048), (2, "", 0)):
        (nodes / f"node{n}").mkdir(parents=True)
        (nodes / f"node{n}" / "cpulist").write_text(cpus + "\n")
        (nodes / f"node{n}" / "meminfo").write_text(f"Node {n} MemTotal:       {kib} kB\n")
        (nodes / f"node{n}" / "distance").write_text("10 20 20\n")
    (tmp_path / "dev").mkdir()
    host = probe.HostPaths(proc=tmp_path / "proc", sys=tmp_path / "sys", dev=tmp_path / "dev")
    monkeypatch.setenv("PMEMLAB_PMEM", "/dev/pmem4 /dev/pmem5")
    monkeypatch.setenv("PMEMLAB_PMEM_DRAM", "/dev/pmem9")
    subs = Substitutes.probe(host=host)
    assert (subs.pmem, subs.pmem_dram, subs.cpuless_node, subs.memory_nodes) == ("/dev/pmem4", "/dev/pmem9", "1",
                                                                                 frozenset({0, 1}))
    monkeypatch.delenv("PMEMLAB_PMEM")
    assert Substitutes.probe(host=host).pmem is None
    (tmp_path / "dev" / "pmem0").touch()
    assert Substitutes.probe(pmem=None, host=host).pmem == str(tmp_path / "dev" / "pmem0")
    assert Substitutes.probe(pmem="/dev/pmem7", host=host).pmem == "/dev/pmem7"


def test_choose_loads_config_option_or_none():
    cfg = parse_config(CONFIG)
    subs = Substitutes(pmem="/dev/pmem0")
    assert [t.label for t in choose_loads(cfg.targets, None, subs)] == ["pmem", "dram", "emulated"]
    assert [t.label for t in choose_loads(cfg.targets, "dram,pmem", subs)] == ["dram", "pmem"]
    assert choose_loads(cfg.targets, "loaded", subs) is None
    assert choose_loads(parse_config("[base]\nmode = 'latency'\n").targets, None, subs) is None


# --------------------------------------------------------------------------
# the module's named targets
# --------------------------------------------------------------------------
def test_a_label_is_the_name_of_its_module_target():
    assert [target_name(label) for label in ("dram", "dram-node1", "pmem0", "dram_4k")] == \
        ["dram", "dram-node1", "pmem0", "dram_4k"]
    assert target_name("DRAM.2m") == "dram-2m" and target_name("x" * 40) == "x" * 31
    assert TargetLoad("cxl", (("target", "cxl"),)).named == "cxl", "a bare name: a target the module holds"
    assert not TargetLoad("dram", (("target", "dram"),)).named
    assert not TargetLoad("p", (("target", "/dev/pmem0"),)).named
    assert not TargetLoad("c", (("target", "cxl"), ("dram_size", "1G"))).named


def test_named_targets_added_found_and_removed_only_when_added(tmp_path):
    fake = make_fake(tmp_path)
    loader = NamedTargets(fake.root, io=fake)
    dram = loader.open(TargetLoad("dram", (("target", "dram"), ("dram_size", "64M"), ("dram_node", "0"))))
    assert dram.root == fake.root / "targets" / "dram"
    assert dram.facts()["target_kind"] == "dram" and dram.facts()["target_size"] == 64 << 20
    assert fake.adds == ["dram dram dram_size=64M dram_node=0"]
    # present already (insmod targets=..., or an earlier targets/add): found, the same target, kept after
    fake.write(fake.root / "targets" / "add", "cxl dram dram_node=0 dram_size=32M\n")
    fake.adds.clear()
    cxl = loader.open(TargetLoad("cxl", (("target", "dram"), ("dram_size", "32M"))))
    assert cxl.facts()["target_size"] == 32 << 20 and fake.adds == []
    assert loader.open(TargetLoad("c", (("target", "cxl"),))).root == cxl.root, "a bare name: that target"
    # the top level (insmod target=) is not touched: no reload, its facts as they were
    assert fake.loads == [] and (fake.root / "target").read_text() == "/dev/pmem0\n"
    # a named target's resume identity is what it is, not the module's load parameters (the top level's)
    assert cxl.identity() == {"backend": "kernel", "load": {
        "target": "dram", "target_node": "0", "target_nodes": "0", "target_weights": "1",
        "target_page_size": "2097152", "target_size": str(32 << 20)}}
    loader.close()
    assert fake.removes == ["dram"] and set(fake.named) == {"cxl"}, "only what the loader added goes"


def test_named_targets_refused_with_the_reason(tmp_path):
    fake = make_fake(tmp_path, refuse_add=lambda p: "dram_size 1T: not enough memory"
                     if p.get("dram_size") == "1T" else None)
    loader = NamedTargets(fake.root, io=fake)
    fake.write(fake.root / "targets" / "add", "dram dram dram_size=64M\n")
    for load, what in (
            (TargetLoad("dram", (("target", "dram"), ("dram_size", "32M"))),
             "the module's target dram is not target=dram dram_size=32M: its target_size is 67108864, not "
             "dram_size=32M"),
            (TargetLoad("dram", (("target", "/dev/pmem0"),)), "is not target=/dev/pmem0: it is target dram"),
            (TargetLoad("big", (("target", "dram"), ("dram_size", "1T"))),
             "targets/add big dram dram_size=1T refused: big: dram_size 1T: not enough memory"),
            (TargetLoad("f", (("target", "dram"), ("size", "1G"))), "size is not a key of a module target"),
            (TargetLoad("Bad.", (("target", "/dev/sda"),)), "targets/add bad- /dev/sda refused: /dev/sda: not"),
            (TargetLoad("cxl", (("target", "cxl"),)), "the module holds no target named cxl")):
        with pytest.raises(LoadRefused, match=what.replace("(", r"\(").replace(")", r"\)")):
            loader.open(load)
    assert loader.added == [] and set(fake.named) == {"dram"}
    # a module without targets/ (built before named targets): refused, saying what to load
    (fake.root / "targets" / "add").unlink()
    (fake.root / "targets" / "remove").unlink()
    for d in (fake.root / "targets").iterdir():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    (fake.root / "targets").rmdir()
    with pytest.raises(ModuleNotLoaded, match="has no named targets"):
        loader.open(TargetLoad("x", (("target", "dram"),)))


def test_a_target_its_run_holds_stays_and_says_so(tmp_path, capsys):
    fake = make_fake(tmp_path, run_s=30.0)
    loader = NamedTargets(fake.root, io=fake)
    mod = loader.open(TargetLoad("dram", (("target", "dram"),)))
    mod.write("run", "1")
    log = tmp_path / "log"
    with log.open("w") as fh:
        loader.log = fh
        loader.close()
    assert "the target dram added for the sweep stays: targets/remove: dram: its run is active" in log.read_text()
    mod.abort()


def test_the_loader_of_each_backend(tmp_path):
    assert isinstance(open_loader("kernel", str(tmp_path)), NamedTargets)
    with pytest.raises(ConfigError, match="size: options of backend=user"):
        open_loader("kernel", None, {"size": "1G"})
    assert open_loader("user", None, {"size": "1G", "backend": "user"}).options == {"size": "1G"}


# --------------------------------------------------------------------------
# a sweep over targets into one CSV
# --------------------------------------------------------------------------
@pytest.fixture
def bed(tmp_path, monkeypatch):
    fake = make_fake(tmp_path)
    monkeypatch.setattr(targets_cli, "open_loader",
                        lambda kind, sysfs, opts=None: NamedTargets(fake.root, io=fake) if kind == "kernel"
                        else open_loader(kind, sysfs, opts))
    monkeypatch.setattr(cli_backend, "module", lambda args: fake.module())  # --targets loaded: the module as it is
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: 2)
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", "not installed"))
    monkeypatch.delenv("PMEMLAB_PMEM_DRAM", raising=False)
    cfg = tmp_path / "cmp.toml"
    cfg.write_text(CONFIG)
    return fake, cfg, tmp_path / "results" / "cmp.csv"


def sweep(cfg: Path, out: Path, *extra: str) -> int:
    return cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress", "--pmem", "/dev/pmem0", *extra])


def test_one_csv_with_every_target(bed, capsys):
    fake, cfg, out = bed
    assert sweep(cfg, out) == 0
    err = capsys.readouterr().err
    assert "target emulated not measured: no DRAM-emulated fsdax namespace" in err
    df = pd.read_csv(out, dtype={"thread": str})
    agg = df[df["thread"] == "all"]
    assert list(dict.fromkeys(agg["target_label"])) == ["pmem", "dram", "emulated"]
    per = agg.groupby("target_label")
    assert dict(per["status"].agg(lambda s: ",".join(sorted(set(s))))) == {"pmem": "ok", "dram": "ok",
                                                                           "emulated": "skipped"}
    assert (per.size() == 8).all(), "4 points x 2 repeats on every target"
    kinds = agg.drop_duplicates("target_label").set_index("target_label")
    assert kinds.loc["pmem", "target_kind"] == "fsdax" and kinds.loc["dram", "target_kind"] == "dram"
    assert kinds.loc["dram", "target_size"] == 64 << 20 and kinds.loc["pmem", "target"] == "/dev/pmem0"
    assert agg[agg["target_label"] == "emulated"]["error"].str.startswith("no DRAM-emulated").all()
    # the same points on each target, told apart by their keys
    keys = agg.groupby("target_label")["point_key"].apply(set)
    assert not keys["pmem"] & keys["dram"] and agg.groupby("target_label")["point"].nunique().eq(4).all()
    # each target a named target of the module, added once, both there at once, no reload: 8 runs each,
    # in target order, each in its own directory; removed after (the sweep added them)
    assert [r["op"] for r in fake.runs[:2]] == ["load", "load"] and len(fake.runs) == 16
    assert fake.adds == ["pmem /dev/pmem0", "dram dram dram_size=64M"] and fake.removes == ["dram", "pmem"]
    assert fake.loads == [] and (fake.root / "run_id").read_text() == "", "the top level ran nothing"
    side = json.loads(out.with_suffix(".json").read_text())
    assert list(side["targets"]) == ["pmem", "dram", "emulated"]
    assert side["targets"]["dram"]["load"] == "target=dram dram_size=64M"
    assert side["targets"]["dram"]["conditions"]["target_kind"] == "dram"
    assert side["targets"]["emulated"]["not_measured"].startswith("unavailable: no DRAM-emulated")
    assert set(side["resume"]["identity"]["targets"]) == {"pmem", "dram", "emulated"}
    summary = pd.read_csv(out.with_name("cmp.summary.csv"))
    assert set(summary["target_label"]) == {"pmem", "dram"} and len(summary) == 8


def test_a_target_the_module_holds_is_used_and_kept(bed, capsys):
    """A named target there before the sweep (insmod targets=..., targets/add) is used as it is and
    stays after; a bare name in --targets is such a target; one of that name that is another
    target is refused with the reason (error rows), the others still run."""
    fake, cfg, out = bed
    fake.write(fake.root / "targets" / "add", "dram dram dram_size=64M\n")
    fake.write(fake.root / "targets" / "add", "cxl dram dram_size=32M dram_node=0\n")
    fake.adds.clear()
    assert sweep(cfg, out, "--targets", "pmem,dram,cxl") == 0
    assert fake.adds == ["pmem /dev/pmem0"] and fake.removes == ["pmem"] and set(fake.named) == {"dram", "cxl"}
    agg = pd.read_csv(out, dtype={"thread": str}).query("thread == 'all'")
    assert agg.groupby("target_label")["target_size"].first().to_dict() == {"cxl": 32 << 20, "dram": 64 << 20,
                                                                            "pmem": 1 << 30}
    capsys.readouterr()
    assert sweep(cfg, out.with_name("b.csv"), "--targets", "pmem,dram=dram dram_size=16M") == exitcodes.PARTIAL
    assert "target dram: the module's target dram is not target=dram dram_size=16M: its target_size is " \
           "67108864, not dram_size=16M" in capsys.readouterr().err


def test_default_targets_only_for_a_config_that_declares_none(bed, tmp_path, capsys):
    """--default-targets (what scripts/run-configs gives where it loads the module itself): the
    targets of a config without [sweep.targets]; a config that declares targets keeps its own, and
    --targets wins over both."""
    fake, cfg, out = bed
    plain = tmp_path / "plain.toml"
    plain.write_text(CONFIG.replace('name = "cmp"', 'name = "plain"').split("[sweep.targets]")[0]
                     + "[base]" + CONFIG.split("[base]")[1])
    outdir = tmp_path / "many"
    assert cli.main(["sweep", str(cfg), str(plain), "--out-dir", str(outdir), "--no-progress", "--pmem", "/dev/pmem0",
                     "--default-targets", "pmem"]) == 0
    labels = {name: set(pd.read_csv(outdir / f"{name}.csv", dtype=str)["target_label"])
              for name in ("cmp", "plain")}
    assert labels == {"cmp": {"pmem", "dram", "emulated"}, "plain": {"pmem"}}
    assert "pmem /dev/pmem0" in fake.adds, "the namespace was a named target"
    assert cli.main(["sweep", str(plain), "-o", str(tmp_path / "both.csv"), "--no-progress", "--pmem", "/dev/pmem0",
                     "--default-targets", "pmem", "--targets", "dram"]) == 0
    assert set(pd.read_csv(tmp_path / "both.csv", dtype=str)["target_label"]) == {"dram"}
    capsys.readouterr()
    assert cli.main(["sweep", str(plain), "--no-progress", "--dry-run", "--default-targets", "pmem,dram",
                     "--pmem", "/dev/pmem0"]) == 0
    assert "target pmem: load target=/dev/pmem0" in capsys.readouterr().out


def test_resume_per_target(bed, capsys):
    fake, cfg, out = bed
    fake.interrupt_at_run = 11  # during dram's third run
    assert sweep(cfg, out, "--targets", "pmem,dram") == 130
    done = pd.read_csv(out, dtype={"thread": str})
    done = done[done["thread"] == "all"]
    assert done.groupby("target_label").size().to_dict() == {"pmem": 8, "dram": 2}
    fake.interrupt_at_run = None
    before = len(fake.runs)
    assert sweep(cfg, out, "--targets", "pmem,dram") == 0
    assert len(fake.runs) - before == 6, "only dram's missing runs"
    df = pd.read_csv(out, dtype={"thread": str})
    assert df[df["thread"] == "all"].groupby("target_label").size().to_dict() == {"pmem": 8, "dram": 8}
    # a target added later starts from nothing; the others are kept
    before = len(fake.runs)
    assert sweep(cfg, out, "--targets", "pmem,dram,dram2=dram dram_size=32M") == 0
    assert len(fake.runs) - before == 8
    capsys.readouterr()
    # a target that is not the same target any more: refused, naming it
    assert sweep(cfg, out, "--targets", "pmem,dram=dram dram_size=32M,dram2=dram dram_size=32M") == 2
    assert "another target dram (" in capsys.readouterr().err
    # a target measured before and left out now: refused
    assert sweep(cfg, out, "--targets", "pmem,dram") == 2
    assert "with target dram2 as well, which this command does not measure" in capsys.readouterr().err
    # a CSV of the module as it was loaded is not resumed over targets
    plain = out.with_name("plain.csv")
    assert sweep(cfg, plain, "--targets", "loaded") == 0
    assert sweep(cfg, plain, "--targets", "pmem,dram") == 2
    assert "by a sweep of the module as it was loaded" in capsys.readouterr().err


def test_a_load_the_module_refuses_gives_error_rows(bed, capsys):
    fake, cfg, out = bed
    fake.refuse_add = lambda p: "dram_size 1T: not enough memory" if p.get("dram_size") == "1T" else None
    # some runs ok, those of big failed: a partial sweep
    assert sweep(cfg, out, "--targets", "pmem,big=dram dram_size=1T") == exitcodes.PARTIAL
    df = pd.read_csv(out, dtype={"thread": str})
    big = df[df["target_label"] == "big"]
    assert set(big["status"]) == {"error"} and big["error"].str.contains("not enough memory").all()
    assert "target big: targets/add big dram dram_size=1T refused: big: dram_size 1T: not enough memory" in \
        capsys.readouterr().err
    res = load_results([out])
    assert res.not_run == ["big: target big not opened: targets/add big dram dram_size=1T refused: big: "
                           "dram_size 1T: not enough memory"]


def test_dry_run_lists_the_targets_and_loads_nothing(bed, capsys):
    fake, cfg, out = bed
    assert sweep(cfg, out, "--dry-run") == 0
    text = capsys.readouterr().out
    assert "target pmem: load target=/dev/pmem0" in text and "target emulated: not measured" in text
    assert fake.adds == [] and not out.exists()


def test_target_option_and_axis_do_not_mix(bed, capsys):
    fake, cfg, out = bed
    assert sweep(cfg, out, "--target", "/dev/pmem0") == 2
    assert "--targets" in capsys.readouterr().err


def test_the_module_as_loaded_without_an_axis(bed, tmp_path):
    fake, cfg, out = bed
    assert sweep(cfg, out, "--targets", "loaded") == 0
    df = pd.read_csv(out, dtype={"thread": str, "target_label": str})
    assert df["target_label"].isna().all() and fake.adds == []


# --------------------------------------------------------------------------
# the user backend, re-pointed for real
# --------------------------------------------------------------------------
def test_user_backend_over_two_dram_targets(tmp_path, capsys):
    cfg = tmp_path / "u.toml"
    cfg.write_text(dedent("""\
        [sweep]
        name = "u"
        [base]
        mode = "bandwidth"
        duration_ms = 20
        working_set = "4M"
        threads = 1
        [axes]
        op = ["load", "ntstore"]
    """))
    out = tmp_path / "u.csv"
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress", "--backend", "user",
                     "--targets", "small=dram dram_size=8M,dram-4k=dram dram_size=16M dram_pages=4k"]) == 0
    df = pd.read_csv(out, dtype={"thread": str})
    agg = df[df["thread"] == "all"]
    assert list(dict.fromkeys(agg["target_label"])) == ["small", "dram-4k"] and (agg["status"] == "ok").all()
    sizes = agg.drop_duplicates("target_label").set_index("target_label")["target_size"]
    assert sizes.to_dict() == {"small": 8 << 20, "dram-4k": 16 << 20}
    assert set(agg[agg["target_label"] == "dram-4k"]["target_pages"]) == {"4k"}
    # the rates themselves are the host's (noisy: other work runs); every run gave one
    assert agg["bw_gbps"].notna().all() and (agg["bw_gbps"] > 0).any() and set(agg["target_kind"]) == {"user-dram"}
    # each run's own conditions, on every target (runcond.RunWatch through the AxisExecutor)
    rows = read_rows(out)
    assert rows["thp_enabled"].notna().all() and rows["steal_pct"].dropna().between(0, 100).all()
    assert rows["steal_pct"].notna().any()
    if os.geteuid() == 0 and taskstats.ExitListener.open() is not None:
        threads = rows[rows["thread"] != "all"]
        assert threads["ctx_voluntary"].notna().all(), "every worker's context switches, on both targets"


# --------------------------------------------------------------------------
# figures: one CSV of several targets, and the files of one load each
# --------------------------------------------------------------------------
def test_figures_read_the_target_label_column(bed):
    fake, cfg, out = bed
    assert sweep(cfg, out) == 0
    res = load_results([out])
    assert set(res.ok()["target_label"]) == {"pmem", "dram"}
    assert res.not_run and res.not_run[0].startswith("emulated: no DRAM-emulated fsdax namespace")
    assert res.hist is None or "target_label" in res.hist


def one_csv_of_two_targets(name: str, tmp_path: Path) -> Path:
    """The recorded NAME.csv of one target, pmem (and its histograms), as the result of two: pmem
    and a copy labelled dram, point keys made per target as a sweep over targets makes them."""
    out = tmp_path / f"{name}.csv"
    for suffix in (".csv", ".hist.csv"):
        base = pd.read_csv(RECORDED / f"{name}{suffix}", dtype=str)
        assert set(base["target_label"]) == {"pmem"}
        parts = [base.assign(target_label=label, point_key=base["point_key"] + ("" if label == "pmem" else "-d"))
                 for label in ("pmem", "dram")]
        pd.concat(parts).to_csv(out.with_name(name + suffix), index=False)
    return out


def drawn_lines(ax) -> list[tuple[list[float], list[float]]]:
    return [(list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()
            if line.get_gid() != "pmemlab-reference"]


def assert_same_lines(got, expected) -> None:
    assert len(got) == len(expected)
    for (gx, gy), (ex, ey) in zip(got, expected):
        assert gx == pytest.approx(ex, nan_ok=True) and gy == pytest.approx(ey, nan_ok=True)


def test_flush_instr_draws_a_row_per_target(tmp_path):
    """flush-instr (one target in the paper) gives each target its row of panels, the same panels
    the target alone gives."""
    from pmemlab.plots.recipes import RECIPES

    name = "flush-instr"
    alone = RECIPES[name](load_results([RECORDED / f"{name}.csv"]))
    both = RECIPES[name](load_results([one_csv_of_two_targets(name, tmp_path)]))
    axes_alone = [ax for ax in alone.axes if ax.get_label() != "<colorbar>"]
    axes_both = [ax for ax in both.axes if ax.get_label() != "<colorbar>"]
    assert len(axes_both) == 2 * len(axes_alone) == 4
    assert [ax.get_title() for ax in axes_both] == [f"{t}: {ax.get_title()}" for t in ("dram", "pmem")
                                                    for ax in axes_alone]
    for row in (axes_both[:2], axes_both[2:]):
        for mine, ref in zip(row, axes_alone):
            assert_same_lines(drawn_lines(mine), drawn_lines(ref))


def test_tail_latency_puts_every_target_on_shared_axes(tmp_path):
    """tail-latency of two targets (the recorded pmem and DRAM runs): one percentile panel holding
    each target's lines (the lines the target alone gives, named with the target), and a CCDF
    panel per target, the one the target alone gives, on axes shared between the targets."""
    from pmemlab.plots.recipes import RECIPES

    name = "tail-latency"
    both = RECIPES[name](load_results([RECORDED / f"{name}.csv"]))
    pct, *ccdfs = [ax for ax in both.axes if ax.get_label() != "<colorbar>"]
    assert [ax.get_title() for ax in ccdfs] == [f"{t}: latency CCDF per hotspot size" for t in ("dram", "pmem")]
    for target, ccdf in zip(("dram", "pmem"), ccdfs):
        alone = RECIPES[name](load_results([one_target(name, target, tmp_path / target)]))
        pct_alone, ccdf_alone = [ax for ax in alone.axes if ax.get_label() != "<colorbar>"]
        mine = [c for c in pct.containers if c.get_label().endswith(f" · {target}")]
        assert [c.get_label() for c in mine] == [f"{c.get_label()} · {target}" for c in pct_alone.containers]
        assert_same_lines([(list(c.lines[0].get_xdata()), list(c.lines[0].get_ydata())) for c in mine],
                          [(list(c.lines[0].get_xdata()), list(c.lines[0].get_ydata())) for c in pct_alone.containers])
        assert_same_lines(drawn_lines(ccdf), drawn_lines(ccdf_alone))
    assert len(pct.containers) == 2 * 3
    assert ccdfs[0].get_shared_y_axes().joined(*ccdfs) and ccdfs[0].get_shared_x_axes().joined(*ccdfs)


def test_several_configs_in_one_process(bed, tmp_path, capsys):
    """pmemlab sweep A B: each into OUT_DIR/NAME.csv, in turn; a bad config stops all before any run."""
    fake, cfg, out = bed
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace('name = "cmp"', 'name = "other"').replace('op = ["load", "ntstore"]',
                                                                              'op = ["load"]'))
    outdir = tmp_path / "many"
    assert cli.main(["sweep", str(cfg), str(other), "--out-dir", str(outdir), "--no-progress", "--pmem", "/dev/pmem0",
                     "--targets", "pmem,dram"]) == 0
    assert sorted(p.name for p in outdir.glob("*.csv") if p.name.count(".") == 1) == ["cmp.csv", "other.csv"]
    assert len(fake.runs) == 16 + 8
    err = capsys.readouterr().err
    assert f"pmemlab: {cfg} took" in err and f"pmemlab: {other} took" in err
    assert cli.main(["sweep", str(cfg), str(other), "-o", str(out)]) == 2
    assert "give --out-dir DIR" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[base]\nnosuch = 1\n")
    before = len(fake.runs)
    assert cli.main(["sweep", str(cfg), str(bad), "--out-dir", str(tmp_path / "none"), "--no-progress"]) == 2
    assert len(fake.runs) == before and "nosuch" in capsys.readouterr().err


def test_several_configs_end_with_their_verdict(tmp_path, monkeypatch, capsys):
    """Several configs, some of which end in an error: each one's error and time, then, last, how
    many did not end well (a script reading the last line learns the outcome, as for one config);
    the exit code is the worst."""
    monkeypatch.setenv("PMEMLAB_SYSFS", str(tmp_path / "no-module"))
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", "not installed"))
    plain = tmp_path / "plain.toml"
    plain.write_text("[base]\nduration_ms = 1\n")
    other = tmp_path / "other.toml"
    other.write_text('[sweep]\nname = "other"\n[base]\nduration_ms = 1\n')
    # each config's time on a clock of the test's own, 2.4 s a reading: a real one made "took 0 s"
    # a speed (a config that waited half a second for a CPU took 1 s)
    import pmemlab.cli.sweep as sweep_cli
    from types import SimpleNamespace
    now = [0.0]

    def monotonic() -> float:
        now[0] += 2.4
        return now[0]

    monkeypatch.setattr(sweep_cli, "time", SimpleNamespace(monotonic=monotonic))
    code = cli.main(["sweep", str(plain), str(other), "--out-dir", str(tmp_path / "out"), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == exitcodes.FAILED
    assert [ln.split(" (")[0] for ln in lines[:-1]] == ["pmemlab: module not loaded", f"pmemlab: {plain} took 2 s",
                                                        "pmemlab: module not loaded", f"pmemlab: {other} took 2 s"]
    assert lines[-1] == f"pmemlab: 2 of 2 configs did not end well ({plain}, {other}); fix: see each config's line above"


# --------------------------------------------------------------------------
# the command line's manners over targets: --json, -o checked first, resume only with its sidecar
# --------------------------------------------------------------------------
def test_json_over_targets_and_several_configs(bed, tmp_path, capsys):
    fake, cfg, out = bed
    capsys.readouterr()
    assert sweep(cfg, out, "--targets", "pmem,dram", "--dry-run", "--json") == 0
    dry = json.loads(capsys.readouterr().out)
    assert [t["label"] for t in dry["targets"]] == ["pmem", "dram"] and dry["runs_per_target"] == 8
    assert dry["output"] == str(out) and fake.adds == [] and not out.exists()
    assert sweep(cfg, out, "--targets", "pmem,dram", "--json") == 0
    done = json.loads(capsys.readouterr().out)  # one document, nothing else on stdout
    assert done["targets"] == ["pmem", "dram"] and done["exit_code"] == 0 and done["ok"] == 16
    assert done["csv"] == str(out) and done["status"] == "complete"
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace('name = "cmp"', 'name = "other"'))
    bad = tmp_path / "late.toml"  # reads fine, fails when its -o cannot be taken over
    bad.write_text(CONFIG.replace('name = "cmp"', 'name = "late"'))
    outdir = tmp_path / "many"
    outdir.mkdir()
    (outdir / "late.csv").write_text("mine,not,pmemlab\n1,2,3\n")
    code = cli.main(["sweep", str(cfg), str(bad), str(other), "--out-dir", str(outdir), "--no-progress",
                     "--pmem", "/dev/pmem0", "--targets", "pmem", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == doc["exit_code"] == 2  # the worst of them
    assert [d.get("sweep") or Path(d["config"]).stem for d in doc["sweeps"]] == ["cmp", "late", "other"]
    assert doc["sweeps"][1]["exit_code"] == 2 and "not a pmemlab sweep CSV" in doc["sweeps"][1]["error"]
    assert (outdir / "late.csv").read_text() == "mine,not,pmemlab\n1,2,3\n" and (outdir / "other.csv").exists()


def test_over_targets_output_checked_and_resumed_only_with_its_sidecar(bed, capsys):
    fake, cfg, out = bed
    out.parent.mkdir(parents=True)
    out.write_text("a,b\n1,2\n")
    assert sweep(cfg, out, "--targets", "pmem,dram", "--fresh") == 2
    assert "not a pmemlab sweep CSV; not taking it over" in capsys.readouterr().err
    assert out.read_text() == "a,b\n1,2\n" and fake.adds == [] and not fake.runs
    assert sweep(cfg, out.with_name("x.txt"), "--targets", "pmem") == 2
    assert "not a NAME.csv name" in capsys.readouterr().err
    out.unlink()
    assert sweep(cfg, out, "--targets", "pmem,dram") == 0
    out.with_suffix(".json").unlink()
    runs = len(fake.runs)
    assert sweep(cfg, out, "--targets", "pmem,dram") == 2
    assert "cmp.json is missing" in capsys.readouterr().err and len(fake.runs) == runs


def wait_idle(fake) -> None:
    """Until the fake's top-level run has ended (aborted), within a hang's bound: 1000 looks 10 ms
    apart were a speed (the stand-in's worker, a thread of this process, may wait for a CPU)."""
    deadline = time.monotonic() + 300
    while (fake.root / "state").read_text().strip() == "running":
        assert time.monotonic() < deadline, "the fake's run did not end"
        time.sleep(0.01)


def test_named_targets_are_added_and_removed_between_runs(tmp_path, capsys):
    """The module refuses targets/add and targets/remove while any run goes (EBUSY, "add targets
    between runs"): the loader says so with what to do; a target the loader added stays, told, when
    its remove meets a run; both go once no run is active."""
    fake = make_fake(tmp_path, run_s=60.0)
    loader = NamedTargets(fake.root, io=fake)
    dram = TargetLoad("dram", (("target", "dram"), ("dram_size", "64M")))
    fake.write(fake.root / "run", "1\n")
    with pytest.raises(LoadRefused) as info:
        loader.open(dram)
    assert info.value.cause == ("targets/add dram dram dram_size=64M refused: dram: a run is active on the "
                                "top-level target; add targets between runs")
    assert info.value.fix.startswith("wait until no run is active") and not fake.named
    fake.write(fake.root / "abort", "1\n")
    wait_idle(fake)
    loader.open(dram)
    fake.write(fake.root / "run", "1\n")
    loader.close()
    assert "the target dram added for the sweep stays: targets/remove: dram: a run is active on the " \
           "top-level target; remove targets between runs" in capsys.readouterr().err
    assert set(fake.named) == {"dram"}
    fake.write(fake.root / "abort", "1\n")
    wait_idle(fake)
    fake.write(fake.root / "targets" / "remove", "dram\n")
    assert not fake.named

"""Parameter rules (pmemlab.params mirrors docs/interface.md)."""

from __future__ import annotations

import errno

import pytest

from pmemlab import params as P
from pmemlab.config import expand, load_config
from pmemlab.config.expand import command_line_problems

from testlib import TOP


def full(**kw):
    vals, probs = P.normalize(kw)
    assert probs == []
    return vals


def test_the_table_is_the_modules():
    """PARAMS comes from the module's table (core/params.def, through schema.json): every row
    is there, in its order, with the module's ranges (the drift this replaced said threads 1..4096
    and read_pct 0..99)."""
    import re
    rows = re.findall(r"^PL_PARAM\((\w+),", (TOP / "core" / "params.def")
                      .read_text(), re.M)
    assert list(P.PARAMS) == rows
    assert (P.PARAMS["threads"].lo, P.PARAMS["threads"].hi) == (1, 256)
    assert (P.PARAMS["read_pct"].lo, P.PARAMS["read_pct"].hi) == (0, 100)
    assert P.PARAMS["width"].choices == (0, 8, 16, 32, 64) and P.PARAMS["width"].kind == "enum"
    assert P.PARAMS["mode"].default == "bandwidth" and P.PARAMS["cpus"].default == ""
    assert "store+clwb" in P.OPS and "copy" not in P.OPS and P.WRITE_OPS == set(P.OPS) - {"load", "ntload"}
    # the copies (a load and a store a unit) run on both backends, outside the access ops combined
    assert P.COPY_OPS == ("copy", "ntcopy") and P.CHASE_OPS == ("chase",)


@pytest.mark.parametrize("text,value", [("4096", 4096), ("4K", 4096), ("64M", 64 << 20), ("1G", 1 << 30),
                                        ("2MiB", 2 << 20), (256, 256), ("8k", 8192)])
def test_parse_size(text, value):
    assert P.parse_size(text) == value


@pytest.mark.parametrize("bad", ["4X", "-1", "1.5K", "", True])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError):
        P.parse_size(bad)


def test_cpulist_roundtrip():
    assert P.parse_cpulist("0-3,6") == [0, 1, 2, 3, 6]
    assert P.fmt_cpulist([6, 0, 1, 2, 3]) == "0-3,6"
    assert P.canonical("cpus", [0, 1, 2]) == "0-2"


@pytest.mark.parametrize("key,value,expected", [
    ("op", "store+clwb", "store+clwb"), ("op", ["load", "ntstore"], "load,ntstore"), ("op", "load, ntstore", "load,ntstore"),
    ("width", "32", 32), ("cold", "true", 1), ("probe", 0, 0), ("working_set", "64M", 64 << 20),
    ("mode", "latency", "latency"), ("seed", "0x10", 16),
])
def test_canonical(key, value, expected):
    assert P.canonical(key, value) == expected


@pytest.mark.parametrize("key,value,fragment", [
    ("mode", "fast", "'fast' is not one of the allowed names"), ("op", "stor", "'stor' is not an op"),
    ("width", 24, "24 is not 0, 8, 16, 32 or 64"),
    ("access_size", 4, "4 is outside 8..67108864"), ("access_size", "128M", "134217728 is outside 8..67108864"),
    ("window_offset", 100, "100 is not a multiple of 4096"), ("read_pct", 101, "101 is outside 0..100"),
    ("samples", 2_000_000, "2000000 is outside 0..1048576"), ("threads", 0, "0 is outside 1..256"),
    ("threads", 257, "257 is outside 1..256"), ("cold", 2, "2 is outside 0..1"),
    ("duration_ms", "soon", "'soon' is not a non-negative integer"), ("stride", 12, "12 is not a multiple of 8"),
    ("interleave_gran", 96, "96 is not a multiple of 64"), ("cpus", "3-1", "not a CPU list"),
])
def test_canonical_rejects(key, value, fragment):
    """Refused with the module's own reason (core/params.c, check.c), its name taken off."""
    with pytest.raises(P.ConfigValueError) as ei:
        P.canonical(key, value)
    assert ei.value.problem.reason == fragment or fragment in ei.value.problem.reason
    assert ei.value.problem.key == key
    assert ei.value.problem.allowed == P.PARAMS[key].allowed()


@pytest.mark.parametrize("key,value,expected", [
    ("access_size", "2MiB", 2 << 20), ("access_size", "64 KB", 64 << 10), ("access_size", "0x100", 256),
    ("working_set", "1T", 1 << 40), ("cpus", "0, 1", "0-1"), ("cpus", "0-7:2/4", "0-1,4-5"),
    ("read_pct", 100, 100), ("interleave_gran", 4032, 4032), ("threads", 256, 256),
])
def test_module_and_python_spellings(key, value, expected):
    """The module's text is judged by the module's parser; TOML/Python spellings are turned into it."""
    assert P.canonical(key, value) == expected


def test_unknown_key_suggests():
    _, probs = P.normalize({"acces_size": 64})
    assert probs[0].key == "acces_size" and "did you mean 'access_size'" in probs[0].reason


def problems(facts=None, **kw):
    """What the controller says of a point: its values, else their combination."""
    vals, probs = P.normalize(kw, facts)
    return {(p.key, p.kind) for p in probs or P.check_point(vals, facts)}


def test_cross_rules():
    assert problems(access_size=104, width=8) == {("access_size", "invalid")}  # not a multiple of 64
    assert problems(access_size=16, width=8) == set()
    assert problems(access_size=192, width=64) == set()
    assert problems(access_size=32, width=64) == {("access_size", "invalid")}
    assert problems(access_size=256, stride=128, pattern="stride") == {("stride", "invalid")}
    assert problems(access_size=64, stride=96, pattern="stride") == {("stride", "invalid")}
    assert problems(access_size=64, stride=128, pattern="stride") == set()
    assert problems(op="load,ntstore", threads=2) == set()
    assert problems(read_pct=50, op="ntstore") == set()
    assert problems(probe=1, threads=1) == {("probe", "invalid")}
    assert problems(pattern="hotspot", hotspot_size=128, access_size=256, working_set="1M") == {("hotspot_size", "invalid")}
    assert problems(pattern="hotspot", hotspot_size=8192, working_set=4096) == {("hotspot_size", "invalid")}
    assert problems(placement="per-dimm", interleave_ways=2, dimms_per_thread=3) == {("dimms_per_thread", "invalid")}
    assert problems(cpus="0", threads=2) == {("cpus", "invalid")}
    assert problems(working_set=32, access_size=64) == {("working_set", "invalid")}
    assert problems(cold=1, warm=1) == {("warm", "invalid")}
    assert problems(fence="sfence", fence_interval=192, access_size=256) == {("fence_interval", "invalid")}
    assert problems(op="ntload", width=8) == {("width", "invalid")}  # no such instruction on any CPU


@pytest.mark.parametrize("kind,refused", [("dram", True), ("user-dram", True), ("fsdax", False),
                                          ("user-devdax", False), ("user-file", False), (None, False)])
def test_per_dimm_on_a_dram_target_is_refused(kind, refused):
    """A DRAM target's pages lie anywhere in physical memory: no target offset names a DIMM, so
    per-dimm is refused there (EINVAL, the reason naming DRAM and what to use), by the same libplcore
    check the module and the runner run; a contiguous target (fsdax, devdax, a file's offsets) and
    an unknown kind keep it, and DRAM keeps the other placements."""
    facts = P.TargetFacts(target_size=64 << 20, extra={"target_kind": kind} if kind else {})
    values = full(placement="per-dimm", interleave_ways=2)
    got = P.check_point(values, facts)
    if not refused:
        assert got == []
        return
    (p,) = got
    assert (p.key, p.kind, p.errno) == ("placement", "unsupported", errno.EINVAL)
    assert "per-dimm needs a physically contiguous target" in p.reason and "DRAM" in p.reason
    assert "use per-thread or global" in p.reason
    assert P.check_point(full(placement="per-thread"), facts) == []
    assert P.check_point(full(placement="global"), facts) == []
    assert P.check_point(full(placement="per-dimm", interleave_ways=1), facts) == []  # one way: the one device


@pytest.mark.parametrize("kw", [
    dict(access_size=8, width=0),                      # the widest width that fits: 8
    dict(read_pct=100, op="store"),                    # every access a load
    dict(stride=72, pattern="seq"),                    # seq steps by access_size; stride a multiple of 8
    dict(op="load,store", threads=3),                  # thread i runs entry i mod n
    dict(read_pct=50, op="load,store", threads=2),     # mixes the store thread, the load thread ignores it
    dict(interleave_gran=4032, placement="per-dimm", working_set="1M"),  # a multiple of 64
])
def test_the_six_inputs_the_controller_used_to_refuse(kw):
    """Accepted as the module and docs/interface.md accept them (they once drifted apart)."""
    values, probs = P.normalize(kw)
    assert probs == [] and P.check_point(values) == []


def test_ntload_width_8_is_refused_before_the_run():
    values = full(op="ntload", width=8)
    (prob,) = P.check_point(values)
    assert (prob.key, prob.kind, prob.reason) == ("width", "invalid", "op ntload has no 8-byte instruction")


def test_target_rules_are_unsupported_not_invalid():
    facts = P.TargetFacts(target_size=1 << 30, cpu_features=frozenset({"sse2", "avx", "clflush"}),
                          widths=(8, 16, 32), prefetch_control="none", online_cpus=2, possible_cpus=4,
                          extra={"tsc_khz": 2_000_000})
    assert problems(facts, op="store+clwb") == {("op", "unsupported")}
    assert problems(facts, width=64, access_size=64) == {("width", "unsupported")}
    assert problems(facts, threads=4) == {("threads", "unsupported")}
    assert problems(facts, cpus="0-3", threads=2) == set()   # thread i on the i-th listed: 0 and 1
    assert problems(facts, cpus="2-3", threads=2) == {("cpus", "unsupported")}  # CPU 2 is offline
    assert problems(facts, cpus="7") == {("cpus", "unsupported")}  # CPU 7 cannot exist (4 possible)
    assert problems(facts, prefetch="off") == {("prefetch", "unsupported")}
    assert problems(facts, working_set="2G") == {("working_set", "unsupported")}
    assert problems(facts, window_offset="1G") == {("window_offset", "unsupported")}
    assert problems(facts, delay_ticks=5_000_000) == {("delay_ticks", "unsupported")}  # half of 5 ms
    assert problems(facts, op="store+clflush", threads=2, width=32, access_size=64) == set()
    # width 0 = the widest every op has (32 here): access sizes of 16 run 16-byte instructions
    assert problems(facts, access_size=16) == set()
    # without facts nothing of the machine is judged
    assert problems(None, op="store+clwb", threads=200, prefetch="off") == set()


def test_write_protection_and_backend_ops():
    facts = P.TargetFacts(target_size=1 << 30, extra={"fs_signature": "ext4", "target_kind": "fsdax"},
                          allow_overwrite=False)
    assert problems(facts, op="ntstore") == {("op", "unsupported")}
    assert problems(facts, op="ntstore", read_pct=100) == set()  # loads only
    assert problems(facts, op="load") == set()
    ok = P.TargetFacts(target_size=1 << 30, extra={"fs_signature": "ext4", "target_kind": "fsdax"},
                       allow_overwrite=True)
    assert problems(ok, op="ntstore") == set()
    # the copies run on the module too (issue 35): a write, so the guard applies as to a store
    assert problems(facts, op="copy", read_pct=100) == set()
    assert problems(facts, op="ntcopy") == {("op", "unsupported")}
    assert problems(ok, op="copy,ntcopy", threads=2) == set()
    assert problems(ok, op="copy", placement="per-dimm", interleave_ways=2) == {("op", "invalid")}
    user = P.TargetFacts(target_size=1 << 30, extra={"fs_signature": "none", "target_kind": "user-dram"},
                         allow_overwrite=False)
    assert problems(user, op="copy") == set()
    assert problems(user, op="chase") == {("op", "invalid")}  # chase: latency mode only
    # chase runs on the module too (issue 35): latency mode, chase_page over 4 KiB slots only; it lays
    # its chain in the target, so a target carrying a file system needs allow_overwrite as a store does
    assert problems(facts, op="chase", mode="latency") == {("op", "unsupported")}
    assert problems(ok, op="chase", mode="latency") == set()
    assert problems(ok, op="chase") == {("op", "invalid")}
    assert problems(ok, op="chase", mode="latency", chase_page=1) == {("chase_page", "invalid")}
    assert problems(ok, op="chase", mode="latency", chase_page=1, access_size=4096) == set()
    # and over 2 MiB slots (the 2 MiB-page TLB): a chase's sample is its hops, not one 2 MiB access
    assert problems(ok, op="chase", mode="latency", chase_page=1, access_size="2M") == set()
    assert problems(ok, op="chase", mode="latency", access_size="2M") == set()
    for other in (8192, 65536, 1 << 20, 4 << 20):
        assert problems(ok, op="chase", mode="latency", chase_page=1, access_size=other) == {("chase_page", "invalid")}
    assert problems(ok, op="load", mode="latency", access_size="2M") == {("access_size", "invalid")}  # one access
    assert problems(ok, op="chase", mode="latency", chase_batch=24) == {("chase_batch", "invalid")}
    # chase_write=raw: each thread's chain at least one batch of lines (64 lines of 4 KiB here)
    assert problems(ok, op="chase", mode="latency", chase_write="raw", working_set=4096) == {("chase_batch", "invalid")}
    assert problems(ok, op="chase", mode="latency", chase_write="raw", working_set=4096, chase_batch=64) == set()
    assert problems(ok, op="chase", mode="latency", chase_write="store", working_set=4096) == set()


def test_overwrite_verdict_reads_as_the_targets_contents_not_a_range():
    """The validator's overwrite refusal (EPERM) names what the target carries and the way past
    it; an op list is not what is wrong, so no "(allowed: ...)" list follows it, and the
    controller's guard recognises it among a sweep's skip reasons."""
    facts = P.TargetFacts(target_size=1 << 30, extra={"fs_signature": "gpt", "target_kind": "fsdax"},
                          allow_overwrite=False)
    (prob,) = P.check_point(P.normalize({"op": "ntstore"})[0], facts)
    assert prob.errno == errno.EPERM and prob.key == "op"
    assert prob.reason.startswith("refusing a write run") and "gpt" in prob.reason
    assert "(allowed:" not in prob.message() and "allow_overwrite=1" in prob.message()
    err = command_line_problems([prob])
    assert "allow_overwrite=1" in err.fix and "change the values" not in err.fix
    (bad,) = P.check_point(P.normalize({"op": "store+clwb"})[0], P.TargetFacts(cpu_features=frozenset()))
    assert "(allowed:" in bad.message()


def test_sweep_points_skipped_by_the_overwrite_guard_say_eperm(tmp_path):
    """A sweep's write points the module's verdict skips for what the target carries keep the
    verdict's errno, which `pmemlab sweep` gives to the controller's own guard (no text match)."""
    cfg_path = tmp_path / "w.toml"
    cfg_path.write_text('[sweep]\nname = "w"\n[axes]\nop = ["load", "ntstore", "store+clwb"]\n')
    facts = P.TargetFacts(target_size=1 << 30, cpu_features=frozenset({"sse2", "avx", "avx2"}),
                          extra={"fs_signature": "gpt", "target_kind": "fsdax"}, allow_overwrite=False)
    points = {p.params["op"]: p for p in expand(load_config(cfg_path), facts)}
    assert not points["load"].skip_reason and points["load"].skip_errno == 0
    assert points["ntstore"].skip_errno == errno.EPERM and "gpt" in points["ntstore"].skip_reason
    assert points["store+clwb"].skip_reason and points["store+clwb"].skip_errno != errno.EPERM


def test_normalize_with_facts_judges_values_in_table_order():
    facts = P.TargetFacts(target_size=1 << 30, online_cpus=2)
    _, probs = P.normalize({"access_size": 3, "threads": 4}, facts)
    assert [(p.key, p.kind) for p in probs] == [("threads", "unsupported"), ("access_size", "invalid")]
    _, probs = P.normalize({"access_size": 3, "threads": 4})
    assert [(p.key, p.kind) for p in probs] == [("access_size", "invalid")]


@pytest.mark.parametrize("key,value", [("threads", True), ("duration_ms", False), ("width", True),
                                       ("access_size", True), ("cpus", [True, 1]), ("seed", False)])
def test_booleans_are_not_numbers(key, value):
    with pytest.raises(P.ConfigValueError) as ei:
        P.canonical(key, value)
    assert ei.value.problem.key == key


def test_boolean_params_take_booleans():
    assert P.canonical("cold", True) == 1 and P.canonical("probe", False) == 0
    assert P.canonical("warm", "true") == 1 and P.canonical("cold", 0) == 0


def test_remote_cpus_pick_the_nearest_node_with_enough_cpus() -> None:
    facts = P.TargetFacts(target_node=0, node_cpus={0: (0, 1), 1: (2, 3, 4, 5), 2: (6,)},
                          node_distance={0: {0: 10, 1: 32, 2: 21}})
    assert P.remote_cpus(1, facts) == [6]          # node 2 is nearest
    assert P.remote_cpus(2, facts) == [2, 3]       # node 2 has one CPU: next nearest
    assert "node 1 has 4" in str(P.remote_cpus(5, facts))
    assert "unknown" in str(P.remote_cpus(1, P.TargetFacts()))
    alone = P.TargetFacts(target_node=0, node_cpus={0: (0, 1), 1: ()})
    assert "no NUMA node other than the target's node 0" in str(P.remote_cpus(1, alone))
    params = P.normalize({"cpus": "Remote", "threads": 2})[0]
    assert params["cpus"] == "remote"
    assert P.resolve_cpus(params, facts)["cpus"] == "2-3"
    with pytest.raises(ValueError, match="cpus = remote"):
        P.resolve_cpus(params, alone)
    with pytest.raises(ValueError, match="unresolved"):
        P.to_sysfs("cpus", "remote")
    probs = P.check_point(params, alone)
    assert [(p.key, p.kind) for p in probs] == [("cpus", "unsupported")]
    assert not P.check_point(params, facts)


def test_interface_doc_table_is_generated_from_the_table():
    """docs/interface.md holds the table `make docs` writes from core/params.def: a row added
    to the table, or a range changed, without `make docs` fails here (the doc against the
    package's schema.json) or in test_params_schema.py (schema.json against the library)."""
    doc = (TOP / "docs" / "interface.md").read_text()
    assert doc.count(P.DOC_BEGIN) == 1 and doc.count(P.DOC_END) == 1
    section = doc[doc.index(P.DOC_BEGIN):doc.index(P.DOC_END) + len(P.DOC_END) + 1]
    assert section == P.doc_table(), "docs/interface.md is stale: run `make docs`"
    for name, p in P.PARAMS.items():
        assert f"| `{name}` | {p.allowed()} |" in section


def test_pmemlab_params_lists_the_modules_table(capsys):
    import json

    import pmemlab.cli as cli

    assert cli.main(["params"]) == 0
    text = capsys.readouterr().out
    assert "threads" in text and "allowed: 1..256, at most the online CPUs" in text
    assert "allowed: 0..100" in text  # read_pct
    assert cli.main(["params", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == list(P.PARAM_NAMES)
    assert rows["access_size"]["allowed"] == "8, 16, 32 or a multiple of 64, up to 64M"
    assert rows["width"]["default"] == 0 and rows["mode"]["default"] == "bandwidth"
    assert cli.main(["params", "--markdown"]) == 0
    assert capsys.readouterr().out == P.doc_table()


@pytest.mark.parametrize("name", ["CXL!", "Cxl", "a b", "x" * 32, "add", "remove", "cxl.0", "/dev/pmem0"])
def test_load_target_on_the_module_is_a_target_name_on_the_write(name: str) -> None:
    """The module's load_target names a named target: what targets/add could never name is
    refused on the write (EINVAL, the rule in the reason), as docs/interface.md says; the
    runner's is a spec (a path), and without facts of the backend nothing more is judged."""
    from pmemlab import plcore
    rc, why, param, machine = plcore.judge_value("load_target", name, "backend=kernel\n")
    if " " in name:
        assert rc == -errno.EINVAL and "spaces" in why, why
        return
    assert rc == -errno.EINVAL and not machine, (rc, why)
    assert why.startswith("load_target: ") and "is not a target name (1 to 31 of a-z 0-9 _ -, not add or " \
        "remove, as targets/add names them)" in why, why
    assert plcore.judge_run([("probe", "1"), ("threads", "2"), ("load_target", name)], "backend=kernel\n")[0] \
        == -errno.EINVAL
    assert plcore.judge_value("load_target", name, "backend=user\n")[0] == 0
    assert plcore.judge_value("load_target", name, "")[0] == 0


@pytest.mark.parametrize("name", ["", "cxl", "pm-0", "a_b", "x" * 31])
def test_load_target_names_the_module_takes(name: str) -> None:
    from pmemlab import plcore
    rc, shown, _, _ = plcore.judge_value("load_target", name, "backend=kernel\n")
    assert (rc, shown) == (0, name)

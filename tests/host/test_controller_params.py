"""Parameter rules (pmemlab.params mirrors docs/interface.md)."""

from __future__ import annotations

import pytest

from pmemlab import params as P


def full(**kw):
    vals, probs = P.normalize(kw)
    assert probs == []
    return vals


def test_schema_mirrors_interface_doc():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "interface.md").read_text()
    section = doc.split("## Run parameters", 1)[1].split("## Control", 1)[0]
    for name, p in P.PARAMS.items():
        assert (f"`{name}`" in section) == p.documented, f"{name}: documented={p.documented} disagrees with docs/interface.md"


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
    ("mode", "fast", "not an allowed value"), ("op", "stor", "unknown op"), ("width", 24, "not an allowed value"),
    ("access_size", 4, "below the minimum"), ("access_size", "128M", "above the maximum"),
    ("window_offset", 100, "not a multiple of 4096"), ("read_pct", 100, "above the maximum"),
    ("samples", 2_000_000, "above the maximum"), ("threads", 0, "below the minimum"), ("cold", 2, "not 0 or 1"),
    ("duration_ms", "soon", "not an integer"),
])
def test_canonical_rejects(key, value, fragment):
    with pytest.raises(P.ConfigValueError) as ei:
        P.canonical(key, value)
    assert fragment in ei.value.problem.reason
    assert ei.value.problem.key == key
    assert ei.value.problem.allowed


def test_unknown_key_suggests():
    _, probs = P.normalize({"acces_size": 64})
    assert probs[0].key == "acces_size" and "did you mean 'access_size'" in probs[0].reason


def problems(facts=None, **kw):
    return {(p.key, p.kind) for p in P.check_point(full(**kw), facts)}


def test_cross_rules():
    assert problems(access_size=104, width=8) == {("access_size", "invalid")}  # not a multiple of 64
    assert problems(access_size=24, width=8) == {("access_size", "invalid")}  # below 64, not a power of 2
    assert problems(access_size=16, width=8) == set()
    assert problems(access_size=192, width=64) == set()
    assert problems(access_size=32, width=64) == {("access_size", "invalid")}
    assert problems(access_size=256, stride=128) == {("stride", "invalid")}
    assert problems(access_size=64, stride=96) == {("stride", "invalid")}
    assert problems(access_size=64, stride=128) == set()
    assert problems(op="load,ntstore", threads=3) == {("op", "invalid")}
    assert problems(op="load,ntstore", threads=2) == set()
    assert problems(read_pct=50, op="load") == {("read_pct", "invalid")}
    assert problems(read_pct=50, op="ntstore") == set()
    assert problems(probe=1, threads=1) == {("probe", "invalid")}
    assert problems(pattern="hotspot", hotspot_size=128, access_size=256) == {("hotspot_size", "invalid")}
    assert problems(pattern="hotspot", hotspot_size=8192, working_set=4096) == {("hotspot_size", "invalid")}
    assert problems(placement="per-dimm", interleave_ways=2, dimms_per_thread=3) == {("dimms_per_thread", "invalid")}
    assert problems(placement="per-dimm", interleave_gran=4032) == {("interleave_gran", "invalid")}
    assert problems(cpus="0", threads=2) == {("cpus", "invalid")}
    assert problems(working_set=32, access_size=64) == {("working_set", "invalid")}


def test_target_rules_are_unsupported_not_invalid():
    facts = P.TargetFacts(target_size=1 << 30, cpu_features=frozenset({"sse2", "avx", "clflush"}),
                          widths=(8, 16, 32), prefetch_control="none", online_cpus=2)
    assert problems(facts, op="store+clwb") == {("op", "unsupported")}
    assert problems(facts, width=64, access_size=64) == {("width", "unsupported")}
    assert problems(facts, threads=4) == {("threads", "unsupported")}
    assert problems(facts, cpus="0-3") == {("cpus", "unsupported")}
    assert problems(facts, prefetch="off") == {("prefetch", "unsupported")}
    assert problems(facts, working_set="2G") == {("working_set", "unsupported")}
    assert problems(facts, window_offset="1G") == {("window_offset", "unsupported")}
    assert problems(facts, op="store+clflush", threads=2, width=32, access_size=64) == set()
    # width 0 = widest supported (32 here): access sizes must be multiples of it
    assert problems(facts, access_size=16) == {("access_size", "invalid")}


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

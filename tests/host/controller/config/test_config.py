"""Sweep configs: ranges, expansion, zip, filters, and every validation error path."""

from __future__ import annotations

from textwrap import dedent

import re

import pytest

from pmemlab import params as P
from pmemlab.config import count_points, expand, expand_range, load_config, parse_config
from pmemlab.errors import ConfigError

from testlib import TOP

CONFIGS = TOP / "configs"


def cfg(text: str, **kw):
    return parse_config(dedent(text), source="t.toml", **kw)


def error_of(text: str, facts=None) -> str:
    with pytest.raises(ConfigError) as ei:
        expand(cfg(text), facts)
    return ei.value.report()


@pytest.mark.parametrize("text,kind,values", [
    ("64..65536 *2", "size", [64 << i for i in range(11)]),
    ("64..64K *4", "size", [64, 256, 1024, 4096, 16384, 65536]),
    ("1..4", "int", [1, 2, 3, 4]),
    ("0..100 +25", "int", [0, 25, 50, 75, 100]),
    ("4K..16K +4K", "size", [4096, 8192, 12288, 16384]),
    ("64..1000 *2", "size", [64, 128, 256, 512]),
    ("5..5", "int", [5]),
])
def test_ranges(text, kind, values):
    assert expand_range(text, kind) == values


@pytest.mark.parametrize("text", ["10..1", "64..128 *1", "0..64 *2", "1..5 +0", "a..b", "1..", "1..10000000"])
def test_bad_ranges(text):
    with pytest.raises(ValueError):
        expand_range(text, "int")


def test_cartesian_product_zip_and_order():
    c = cfg("""
        [sweep]
        repeats = 2
        [base]
        mode = "bandwidth"
        duration_ms = 10
        [axes]
        op = ["load", "ntstore"]
        access_size = "64..256 *2"
        [[zip]]
        threads = [1, 2]
        cpus = ["0", "0-1"]
    """)
    assert count_points(c) == 2 * 3 * 2
    pts = expand(c)
    assert len(pts) == 12
    assert [p.varied for p in pts[:3]] == [
        {"op": "load", "access_size": 64, "threads": 1, "cpus": "0"},
        {"op": "load", "access_size": 64, "threads": 2, "cpus": "0-1"},
        {"op": "load", "access_size": 128, "threads": 1, "cpus": "0"},
    ]
    assert all(p.params["duration_ms"] == 10 and p.params["mode"] == "bandwidth" for p in pts)
    assert all(p.params["pattern"] == "seq" for p in pts)  # defaults filled in
    assert len({p.key for p in pts}) == 12
    assert c.repeats == 2


def test_filters_keep_matching_points():
    pts = expand(cfg("""
        [sweep]
        filters = ["access_size <= stride", "op != 'load' or access_size < 1024"]
        [base]
        pattern = "stride"
        [axes]
        op = ["load", "ntstore"]
        access_size = [64, 256, 1024]
        stride = [256, 4096]
    """))
    got = {(p.params["op"], p.params["access_size"], p.params["stride"]) for p in pts}
    assert ("load", 1024, 4096) not in got
    assert ("ntstore", 1024, 4096) in got
    assert all(a <= s for _, a, s in got)
    # (64, 256) x (256, 4096) for both ops = 8, plus ntstore 1024/4096
    assert len(got) == 9


def test_filter_count_exact():
    pts = expand(cfg("""
        [sweep]
        filters = ["access_size <= stride"]
        [axes]
        access_size = [64, 256, 1024]
        stride = [256, 4096]
    """))
    assert sorted((p.params["access_size"], p.params["stride"]) for p in pts) == [
        (64, 256), (64, 4096), (256, 256), (256, 4096), (1024, 4096)]


def test_overrides_and_discovered_defaults():
    c = cfg("""
        [base]
        duration_ms = 100
        [axes]
        op = ["load"]
    """, overrides={"duration_ms": "5"})
    pts = expand(c, discovered={"interleave_ways": 6})
    assert pts[0].params["duration_ms"] == 5
    assert pts[0].params["interleave_ways"] == 6
    c2 = cfg("""
        [base]
        interleave_ways = 2
    """)
    assert expand(c2, discovered={"interleave_ways": 6})[0].params["interleave_ways"] == 2


def test_default_config_expands_and_validates():
    c = load_config(CONFIGS / "default.toml")
    facts = P.TargetFacts(target_size=256 << 20, cpu_features=frozenset("sse2 avx avx2 clflush clflushopt clwb".split()),
                          widths=(8, 16, 32), prefetch_control="none", online_cpus=2)
    pts = expand(c, facts)
    assert len(pts) == 9 and not any(p.skip_reason for p in pts)
    assert {p.params["op"] for p in pts} == {"load", "ntstore", "store+clwb"}
    assert {p.params["access_size"] for p in pts} == {64, 512, 4096}


# ---- every error path names key, value, allowed range and line --------------------------------
ERRORS = [
    # (config, expected fragments)
    ("""
        [base]
        acess_size = 64
     """, ["t.toml:3:", "acess_size", "unknown parameter", "did you mean 'access_size'"]),
    ("""
        [base]
        mode = "fast"
     """, ["t.toml:3:", "base.mode", '"fast"', "'fast' is not one of the allowed names", "allowed: bandwidth, latency"]),
    ("""
        [base]
        op = "load"
        [axes]
        access_size = [64, 3, 128]
     """, ["t.toml:5:", "axes.access_size = 3", "3 is outside 8..67108864",
           "allowed: 8, 16, 32 or a multiple of 64, up to 64M"]),
    ("""
        [axes]
        access_size = "64..16 *2"
     """, ["t.toml:3:", "axes.access_size", "ends before it starts", "START..END"]),
    ("""
        [axes]
        access_size = "64..1K *1"
     """, ["t.toml:3:", "factor must be >= 2"]),
    ("""
        [axes]
        window_offset = [0, 100]
     """, ["t.toml:3:", "window_offset = 100", "not a multiple of 4096"]),
    ("""
        [axes]
        op = ["load", "stor"]
     """, ["t.toml:3:", "'stor' is not an op", "allowed: load, ntload, store"]),
    ("""
        [base]
        threads = 2
        [axes]
        threads = [1, 2]
     """, ["t.toml:5:", "threads: set in [base] and varied here"]),
    ("""
        [axes]
        threads = [1, 2]
        [[zip]]
        threads = [1, 2]
        cpus = ["0", "0-1"]
     """, ["t.toml:5:", "already an axis"]),
    ("""
        [[zip]]
        threads = [1, 2, 3]
        cpus = ["0", "0-1"]
     """, ["t.toml:2:", "one length", "threads has 3", "cpus has 2"]),
    ("""
        [axes]
        op = []
     """, ["t.toml:3:", "empty list"]),
    ("""
        [axes]
        access_size = [64, 64]
     """, ["t.toml:3:", "repeated values"]),
    ("""
        [sweep]
        repeats = 0
     """, ["t.toml:3:", "sweep.repeats = 0", "1..10000"]),
    ("""
        [sweep]
        reps = 3
     """, ["t.toml:3:", "sweep.reps: unknown key"]),
    ("""
        [sweep]
        name = "has space"
     """, ["t.toml:3:", "sweep.name"]),
    ("""
        [sweep]
        target = "pmem0"
     """, ["t.toml:3:", "sweep.target", "/dev/pmemN or dram"]),
    ("""
        [sweep]
        timeout_s = -1
     """, ["t.toml:3:", "timeout_s"]),
    ("""
        [sweep]
        on_unsupported = "ignore"
     """, ["t.toml:3:", "on_unsupported", "skip, error"]),
    ("""
        [sweep]
        filters = [
          "access_size <= stride",
          "acess_size > 1",
        ]
     """, ["t.toml:5:", "unknown name 'acess_size'", "did you mean 'access_size'"]),
    ("""
        [sweep]
        filters = ["__import__('os')"]
     """, ["t.toml:3:", "Call is not allowed"]),
    ("""
        [sweep]
        filters = ["access_size <="]
     """, ["t.toml:3:", "syntax error"]),
    ("""
        [sweep]
        filters = ["op < 5"]
        [axes]
        op = ["load"]
     """, ["t.toml:3:", "fails for op=load", "'<' not supported"]),
    ("""
        [sweep]
        [sweep.adaptive]
        metric = "speed"
     """, ["t.toml:4:", "sweep.adaptive.metric", "not a numeric result column", "bw_gbps", "lat_ns_p99", "ewr"]),
    ("""
        [sweep.adaptive]
        metric = "cpu"
     """, ["t.toml:3:", "sweep.adaptive.metric = \"cpu\"", "not a numeric result column"]),
    ("""
        [sweep.adaptive]
        ci_target = 5
     """, ["t.toml:3:", "ci_target", "0 < x < 1"]),
    ("""
        [sweep.adaptive]
        min_repeats = 5
        max_repeats = 3
     """, ["t.toml:4:", "max_repeats = 3", "smaller than min_repeats 5"]),
    ("""
        [sweep.adaptive]
        max_repeats = 1
     """, ["t.toml:3:", "max_repeats = 1", "2..10000"]),
    ("""
        [params]
        op = "load"
     """, ["t.toml:2:", "unknown section or key 'params'"]),
    ("""
        [base]
        access_size = [64, 128]
     """, ["t.toml:3:", "put lists under [axes]"]),
    ("""
        [base]
        mode = "bandwidth"
        [axes]
        access_size = [64, 16]
        width = [8, 32]
     """, ["t.toml:5:", "axes.access_size = 16", "access_size 16 is not a multiple of width 32",
           "(at access_size=16 width=32)", "allowed: 8, 16, 32 or a multiple of 64"]),
    ("""
        [axes]
        access_size = [64, 100]
     """, ["t.toml:3:", "axes.access_size = 100", "100 must be 8, 16, 32 or a multiple of 64",
           "allowed: 8, 16, 32 or a multiple of 64"]),
    ("""
        [base]
        access_size = 256
        stride = 128
        pattern = "stride"
     """, ["t.toml:4:", "base.stride = 128", "stride 128 is smaller than access_size 256"]),
    ("""
        [axes]
        threads = [1, 2]
        [base]
        probe = 1
     """, ["t.toml:5:", "base.probe = 1", "probe needs mode=bandwidth and threads >= 2", "(at threads=1)"]),
    ("""
        [sweep]
        filters = ["access_size > 1G"]
     """, ["t.toml:3:", "syntax error"]),
    # sections and keys of the wrong type
    ("""
        axes = 5
     """, ["t.toml:2:", "axes must be a table [axes]"]),
    ("""
        zip = 5
     """, ["t.toml:2:", "zip must be an array of tables [[zip]]"]),
    ("""
        sweep = 5
     """, ["t.toml:2:", "sweep must be a table [sweep]"]),
    ("""
        base = "fast"
     """, ["t.toml:2:", "base must be a table [base]"]),
    ("""
        [sweep]
        filters = 5
     """, ["t.toml:3:", "sweep.filters must be a list of expressions"]),
    ("""
        [sweep]
        filters = ["threads > 0", 5]
     """, ["t.toml:3:", "sweep.filters: 5 is not a string expression"]),
    ("""
        [sweep]
        adaptive = 5
     """, ["t.toml:3:", "sweep.adaptive must be a table"]),
    ("""
        [sweep.adaptive]
        metrc = "bw_gbps"
     """, ["t.toml:3:", "sweep.adaptive.metrc: unknown key", "allowed: ci_target, max_repeats, metric, min_repeats"]),
    ("""
        [axes]
        acess_size = [64]
     """, ["t.toml:3:", "axes.acess_size = [64]: unknown parameter", "did you mean 'access_size'"]),
    ("""
        [[zip]]
        threads = [1, 2]
        bogus = [1, 2]
     """, ["t.toml:4:", "zip.bogus = [1, 2]: unknown parameter", "allowed: a run parameter"]),
    ("""
        [[zip]]
        [axes]
        op = ["load"]
     """, ["t.toml:2:", "[[zip]] #1 must hold one or more keys = lists"]),
    ("""
        [axes]
        seed = "0..99999"
        passes = "1..11"
     """, ["t.toml:3:", "the axes give 1100000 points (seed 100000 x passes 11; at most 1000000)"]),
    ("""
        [axes]
        threads = [true, 2]
     """, ["t.toml:3:", "axes.threads = true", "a boolean is not an integer", "allowed: 1..256"]),
    ("""
        [base]
        duration_ms = false
     """, ["t.toml:3:", "base.duration_ms = false", "a boolean is not an integer"]),
    ("""
        [[zip]]
        threads = [1, 2, 1]
        cpus = ["0", "0-1", "0"]
     """, ["t.toml:2:", "[[zip]] rows 1 and 3 are the same (threads=1 cpus=0)", "every row must differ"]),
    # lines of inline tables, dotted keys, items of multi-line lists, filters that contain one another
    ("""
        [sweep]
        repeats = 2
        adaptive = { ci_target = 0.02, metric = "speed" }
     """, ["t.toml:4:", "sweep.adaptive.metric"]),
    ("""
        [sweep]
        adaptive.metric = "speed"
     """, ["t.toml:3:", "sweep.adaptive.metric"]),
    ("""
        name = "x"
        sweep.repeats = 0
     """, ["t.toml:3:", "sweep.repeats = 0"]),
    ("""
        [axes]
        access_size = [
          64,    # 100 in a comment is not the item
          128,
          100,
        ]
     """, ["t.toml:6:", "axes.access_size = 100", "must be 8, 16, 32 or a multiple of 64"]),
    ("""
        [axes]
        op = [
          "load",
          "stor",
        ]
     """, ["t.toml:5:", "'stor' is not an op"]),
    ("""
        [base]
        mode = "bandwidth"
        [axes]
        width = [8, 32]
        access_size = [
          64,
          16,
        ]
     """, ["t.toml:8:", "axes.access_size = 16", "not a multiple of width 32"]),
    ("""
        [sweep]
        filters = [
          "access_size >= 64 or stride < 1",
          "stride < 1",
          "stride < 'a'",
        ]
     """, ["t.toml:6:", "\"stride < 'a'\" fails for"]),
    ("""
        [sweep]
        filters = [
          "op == 'load' or stride < 'x'",
          "stride < 'x'",
        ]
        [axes]
        op = ["load"]
     """, ["t.toml:5:", "\"stride < 'x'\" fails for op=load"]),
]


@pytest.mark.parametrize("text,fragments", ERRORS)
def test_validation_errors(text, fragments):
    msg = error_of(text)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    # one problem: one line; several: one line each (`where: what`), then the one-line summary
    last = msg.splitlines()[-1]
    assert last.startswith("pmemlab: invalid config: ") and last.endswith("nothing was sent to the module")
    assert all(not ln.startswith("pmemlab") and re.match(r"\S+\.toml:\d+: ", ln) for ln in msg.splitlines()[:-1])


def test_all_problems_reported_together():
    msg = error_of("""
        [base]
        mode = "fast"
        pattern = "zigzag"
        [axes]
        op = ["nope"]
    """)
    lines = msg.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("pmemlab: invalid config: 3 problems, one per line above")
    assert [ln.split(": ", 1)[0] for ln in lines[:3]] == ["t.toml:3", "t.toml:4", "t.toml:6"]


def test_toml_syntax_error():
    with pytest.raises(ConfigError) as ei:
        cfg("[base\nmode = 1\n")
    assert "not valid TOML" in ei.value.one_line() and "line 1" in ei.value.one_line()


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load_config(tmp_path / "nope.toml")
    assert "cannot read config" in str(ei.value)


def test_filters_leaving_nothing():
    with pytest.raises(ConfigError) as ei:
        expand(cfg("""
            [sweep]
            filters = ["threads > 100"]
        """))
    assert "leave no point" in str(ei.value)


def test_unsupported_points_skip_or_error():
    facts = P.TargetFacts(target_size=1 << 30, cpu_features=frozenset({"sse2", "clflush"}), widths=(8, 16),
                          prefetch_control="none", online_cpus=2)
    text = """
        [axes]
        op = ["load", "store+clwb"]
        threads = [1, 4]
    """
    pts = expand(cfg(text), facts)
    assert len(pts) == 4
    skipped = {(p.params["op"], p.params["threads"]): p.skip_reason for p in pts}
    assert skipped[("load", 1)] == ""
    assert "clwb" in skipped[("store+clwb", 1)]
    assert "online CPUs" in skipped[("load", 4)]
    strict = cfg(text)
    strict.on_unsupported = "error"
    with pytest.raises(ConfigError) as ei:
        expand(strict, facts)
    assert "\"store+clwb\": store+clwb at width 8 (mov+clwb) needs clwb" in str(ei.value) and "t.toml:3:" in str(ei.value)


def test_readme_example_expands():
    text = (CONFIGS / "README").read_text()
    block = text.split("One complete example", 1)[1].split("This gives", 1)[0]
    example = "\n".join(line[4:] for line in block.splitlines() if line.startswith("    "))
    c = parse_config(example, source="README")
    assert count_points(c) == 72
    pts = expand(c)
    assert 0 < len(pts) < 72
    assert c.adaptive and c.adaptive.max_repeats == 12 and c.name == "bw-size"
    assert all(p.params["pattern"] == "rand" for p in pts)


def test_mixed_list_of_values_and_ranges():
    pts = expand(cfg("""
        [axes]
        access_size = [64, "1K..4K *2"]
    """))
    assert [p.params["access_size"] for p in pts] == [64, 1024, 2048, 4096]


# ---- --set KEY=VALUE ---------------------------------------------------------------------------
SET_BASE = """
    [base]
    duration_ms = 100
    access_size = 256
    [axes]
    op = ["load", "ntstore", "store+clwb"]
    [[zip]]
    threads = [1, 2]
    cpus = ["0", "0-1"]
"""


@pytest.mark.parametrize("overrides,fragments", [
    ({"duration_ms": "abc"}, ['--set: duration_ms = "abc": \'abc\' is not a non-negative integer',
                              "allowed: 1..3600000"]),
    ({"acess_size": "64"}, ['--set: acess_size = "64": unknown parameter', "did you mean 'access_size'"]),
    ({"stride": "128", "pattern": "rand"}, ["--set: stride = 128: stride 128 is smaller than access_size 256",
                                            "allowed: 0..1T, a multiple of 8"]),
    ({"op": "stor"}, ["--set: op = \"stor\": 'stor' is not an op"]),
])
def test_set_problems_are_tagged_as_set(overrides, fragments):
    with pytest.raises(ConfigError) as ei:
        expand(cfg(SET_BASE, overrides=overrides))
    msg = ei.value.report()
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    assert "t.toml:" not in msg  # not blamed on the config's lines


def test_set_pins_an_axis():
    c = cfg(SET_BASE, overrides={"op": "ntstore"})
    assert c.pinned == {"op": "axes"} and c.base["op"] == "ntstore"
    pts = expand(c)
    assert len(pts) == 2 and {p.params["op"] for p in pts} == {"ntstore"}
    assert [p.varied for p in pts] == [{"threads": 1, "cpus": "0"}, {"threads": 2, "cpus": "0-1"}]


def test_set_pins_a_zip_key_and_a_whole_zip():
    c = cfg(SET_BASE, overrides={"threads": "1"})
    assert c.pinned == {"threads": "zip"}
    pts = expand(c)
    assert len(pts) == 3 * 2 and {p.params["threads"] for p in pts} == {1}
    assert {p.params["cpus"] for p in pts} == {"0", "0-1"}  # the zip's other key still varies
    c = cfg(SET_BASE, overrides={"threads": "2", "cpus": "0-1"})
    assert c.pinned == {"threads": "zip", "cpus": "zip"} and [ax.keys for ax in c.axes] == [("op",)]
    assert len(expand(c)) == 3


def test_set_that_makes_zip_rows_alike_is_refused():
    with pytest.raises(ConfigError) as ei:
        expand(cfg("""
            [[zip]]
            threads = [1, 2]
            cpus = ["0-1", "0-1"]
        """, overrides={"threads": "2"}))
    assert "[[zip]] rows 1 and 2 are the same (cpus=0-1) once --set took out threads" in ei.value.one_line()


def test_adaptive_metric_is_what_configs_readme_says():
    from pmemlab.config import adaptive_metrics

    text = (CONFIGS / "README").read_text()
    assert "any result column" not in text
    for metric in ("bw_gbps", "lat_ns_p99", "ewr", "err", "elapsed_ns"):
        assert metric in adaptive_metrics()
        c = cfg(f"""
            [sweep.adaptive]
            metric = "{metric}"
        """)
        assert c.adaptive and c.adaptive.metric == metric
    assert "cpu" not in adaptive_metrics() and not [m for m in adaptive_metrics() if m.startswith("thread")]


def test_a_new_parameter_at_its_default_keeps_the_point_keys(monkeypatch):
    """A parameter added at the end of the table leaves the key of every point that keeps it at
    its default (a CSV written before it was added resumes); set, it makes another point."""
    from pmemlab import config as C

    params = P.defaults()
    before = C.point_key(params)
    new = P.Param(name="new_knob", kind="int", default=0, doc="a parameter added later", lo=0, hi=9)
    monkeypatch.setattr(P, "PARAM_NAMES", (*P.PARAM_NAMES, "new_knob"))
    monkeypatch.setitem(P.PARAMS, "new_knob", new)
    assert C.point_key({**params, "new_knob": 0}) == before
    assert C.point_key({**params, "new_knob": 3}) != before
    assert C.point_key({**params, "duration_ms": params["duration_ms"] + 1}) != before


def test_a_config_built_as_data_is_the_config_its_file_would_be():
    """sweep_config (the one-liners' and curves' sweeps): the SweepConfig parse_config gives for
    the same values written as a file (base, axes, zips in their tables, the resume identity), and
    the same problems, raised together and named after the command."""
    from pmemlab.config import sweep_config
    from pmemlab.sweep.resume import config_identity

    built = sweep_config("demo", "a demo", source="pmemlab demo", repeats=3,
                         base={"mode": "bandwidth", "working_set": 1 << 20, "duration_ms": 5},
                         axes={"access_size": [64, 256]}, zips=[{"op": ["load", "store"], "read_pct": [0, 50]}])
    parsed = cfg("""
        [sweep]
        name = "demo"
        description = "a demo"
        repeats = 3
        [base]
        mode = "bandwidth"
        working_set = 1048576
        duration_ms = 5
        [axes]
        access_size = [64, 256]
        [[zip]]
        op = ["load", "store"]
        read_pct = [0, 50]
    """)
    assert (built.name, built.description, built.repeats, built.base) == \
        (parsed.name, parsed.description, parsed.repeats, parsed.base)
    assert [(a.keys, a.values, a.table) for a in built.axes] == [(a.keys, a.values, a.table) for a in parsed.axes]
    assert config_identity(built) == config_identity(parsed) and built.data == parsed.data
    assert [p.key for p in expand(built)] == [p.key for p in expand(parsed)]
    with pytest.raises(ConfigError) as ei:
        sweep_config("demo", "", source="pmemlab demo", repeats=0, base={"count": -1, "nosuch": 1, "op": "load"},
                     axes={"op": ["load"]}, zips=[{"threads": [1, 2], "cpus": ["0"]}])
    details = "\n".join(ei.value.details)
    assert "5 problems" in ei.value.cause and all(line.startswith("pmemlab demo: ") for line in ei.value.details)
    for what in ("sweep.repeats = 0", "base.count = -1", "nosuch", "op: set in [base] and varied here",
                 "[[zip]] lists must have one length"):
        assert what in details, (what, details)

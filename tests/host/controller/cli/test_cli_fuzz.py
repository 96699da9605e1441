"""Property tests of the command line's manners over generated input (hypothesis): whatever the
config text or the command line, pmemlab answers with a result or with one line on stderr
(`pmemlab: what; fix: what to do`) and a documented exit code, never a traceback, and writes
nothing when it refuses."""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pmemlab.cli as cli  # noqa: E402
import pmemlab.host.machine as machine  # noqa: E402
import pmemlab.host.probe as probe  # noqa: E402
from pmemlab import exitcodes  # noqa: E402
from pmemlab.params import PARAM_NAMES  # noqa: E402

EXAMPLES = int(os.environ.get("PMEMLAB_FUZZ_EXAMPLES", "300"))  # more for a longer hunt
VALID = """[sweep]
name = "fz"
repeats = 2
filters = ["access_size <= working_set // 64"]
[base]
mode = "bandwidth"
duration_ms = 5
working_set = "1M"
[axes]
op = ["load", "ntstore"]
access_size = "64..1K *4"
[[zip]]
threads = [1, 2]
cpus = ["0", "0-1"]
[scale.quick.axes]
access_size = [64]
"""
TRICKY_VALUES = ['"x"', "-1", "0", "1e999", "nan", "inf", "[]", "{}", '"64..4096 *0"', '"64..1 *2"', '"0-99999"',
                 "true", '"\\u0000"', '"é"', "18446744073709551616", '"1G"', '[1, "a"]', '["load", 7]', '"remote"',
                 "3.5", '"ntstore,load"', '"9999999999999K"', '""', "[[1]]", '{a = 1}']
KEYS = [*PARAM_NAMES, "name", "repeats", "filters", "target", "timeout_s", "on_unsupported", "adaptive", "targets",
        "nosuch", "metric", "ci_target", "min_repeats", "max_repeats"]


@st.composite
def mutated_configs(draw: st.DrawFn) -> bytes:
    lines = VALID.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["value", "drop", "insert", "duplicate", "garbage"]))
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "value" and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + draw(st.sampled_from(TRICKY_VALUES))
        elif kind == "drop":
            del lines[i]
        elif kind == "insert":
            lines.insert(i, f"{draw(st.sampled_from(KEYS))} = {draw(st.sampled_from(TRICKY_VALUES))}")
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        else:
            lines.insert(i, draw(st.text(max_size=20)))
        if not lines:
            lines = [""]
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:  # now and then a byte that is not UTF-8
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xff" + data[at:]
    return data


config_texts = st.one_of(mutated_configs(), st.binary(max_size=200), st.text(max_size=200).map(
    lambda t: t.encode("utf-8", "surrogatepass")))


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help / --version, which argparse answers itself
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def check_manners(code: int, err: str) -> None:
    assert "Traceback" not in err
    assert code in (exitcodes.OK, exitcodes.FAILED, exitcodes.BAD_INPUT, exitcodes.PARTIAL), (code, err)
    lines = err.strip().splitlines()
    if code != exitcodes.OK:
        assert lines and lines[-1].startswith("pmemlab: ") and "; fix: " in lines[-1], err
        # the error is its last line; before it only notices of what --set replaced, or the problems
        # of a config one per line (`where: what`) when the last line says so, or (several configs)
        # each config's own lines when the last says how many did not end well
        listed = "one per line above" in lines[-1]
        several = re.match(r"pmemlab: \d+ of \d+ configs did not end well \(", lines[-1])
        for ln in lines[:-1]:
            assert ln.startswith("pmemlab: --set ") or (listed and not ln.startswith("pmemlab: ")) \
                or (several and ln.startswith("pmemlab: ")), err
    else:
        assert all(ln.startswith("pmemlab") for ln in lines), err


@pytest.fixture
def quiet_machine(monkeypatch):
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", "not installed"))
    monkeypatch.delenv("PMEMLAB_SCALE", raising=False)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=config_texts, scale=st.sampled_from(["full", "quick", "nosuch"]))
def test_any_config_is_expanded_or_refused_in_one_line(quiet_machine, data: bytes, scale: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "c.toml"
        cfg.write_bytes(data)
        code, out, err = run(["--sysfs", f"{d}/no-module", "sweep", str(cfg), "--dry-run", "--scale", scale,
                              "-o", f"{d}/out/c.csv"])
        check_manners(code, err)
        assert code in (exitcodes.OK, exitcodes.BAD_INPUT), err
        if code == exitcodes.OK:
            assert "output would go to" in out
        assert sorted(os.listdir(d)) == ["c.toml"]  # a dry run writes nothing, a refusal neither


WORK = {
    "nonutf8.toml": b'[sweep]\nname = "x\xff"\n',
    "ok.toml": VALID.encode(),
    "foreign.csv": b"a,b\n1,2\n",
    "empty.csv": b"",
    "cut.csv": b"sweep,poi",
    "binary.csv": b"\x89PNG\r\n\x1a\n\x00",
    "ragged.csv": b'sweep,point,point_key,repeat,thread,status\nt,0,"k\n',
    "pmemlab-header.csv": b"sweep,point,point_key,repeat,thread,status\n",
    "garbage-rows.csv": b"sweep,point,point_key,repeat,thread,status,bw_gbps\nt,x,k,y,all,ok,zz\n,,,,,,\n",
}
COMMANDS = ["info", "params", "run", "sweep", "targets", "summarize", "plot", "plot-all", "report", "compare", "abort"]


def options_of(command: str) -> list[str]:
    import argparse

    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = action.choices[command]
    return [o for a in sub._actions for o in a.option_strings if o not in ("-h", "--help")]


def tokens(command: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(options_of(command)),
        st.sampled_from([*WORK, "nosuch.csv", "dir", "dir/x.csv", "/proc/x.csv", "ok.toml/x.csv", "/nonexistent",
                         "x.json", "x.summary.csv", "-", "--", "=", "op=", "op=load", "access_size=63", "threads=0",
                         "backend=user", "target=dram", "backend=nosuch", "1", "-1", "nan", "png", "gif", "dram"]),
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=10)
        .filter(lambda t: not t.startswith(("-h", "--h", "--v"))),
    )


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(COMMANDS))
    return [command, *draw(st.lists(tokens(command), max_size=6))]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_any_command_line_is_answered_in_one_line(quiet_machine, monkeypatch, argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        for name, data in WORK.items():
            (work / name).write_bytes(data)
        (work / "dir").mkdir()
        before = sorted(p.name for p in work.rglob("*"))
        monkeypatch.chdir(work)
        monkeypatch.setenv("PMEMLAB_SYSFS", f"{d}/no-module")
        monkeypatch.setenv("PMEMLAB_RUNNER", f"{d}/no-runner")
        code, out, err = run(argv)
        check_manners(code, err)
        # a refusal writes nothing (a summary of the header-only pmemlab CSV is a result, not a refusal)
        if code != exitcodes.OK:
            assert sorted(p.name for p in work.rglob("*")) == before, (argv, err)
        if argv[0] in ("summarize", "report", "compare") and code != exitcodes.OK:
            assert code == exitcodes.BAD_INPUT, (argv, err)
        if argv[0] == "plot-all" and code == exitcodes.FAILED:  # some experiments found, not all rendered
            assert "experiments not rendered" in err, (argv, err)

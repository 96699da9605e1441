"""The command line's manners: documented exit codes (partial failure its own), one line and exit
code 2 for bad input (never a traceback, nothing written), --json on every command, an example
per command in its help, `summarize` printing the table, text columns read back as text."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pandas as pd
import pytest

from sweep_toml import bandwidth_toml

import pmemlab.cli as cli
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab import exitcodes
from pmemlab.analysis import noise
from pmemlab.sweep import summarize_csv
from pmemlab.table import BASE_COLUMNS, TEXT_COLUMNS, CsvSink, read_rows

from testlib import HOST_FIXTURES, TOP

RECORDED = HOST_FIXTURES / "recorded"

CONFIG = bandwidth_toml('op = ["load", "ntstore"]\naccess_size = [64, 256]', repeats=3)


@pytest.fixture
def config_text() -> str:
    return CONFIG


@pytest.fixture
def env(env, tmp_path, monkeypatch):
    """conftest's env, run from tmp_path."""
    monkeypatch.chdir(tmp_path)
    return env


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# ---- exit codes -----------------------------------------------------------------------------------
def test_exit_codes_are_documented_in_help_and_readme(capsys) -> None:
    with pytest.raises(SystemExit) as ei:
        cli.main(["--help"])
    assert ei.value.code == 0
    text = capsys.readouterr().out
    readme = (TOP / "README.md").read_text()
    codes = [code for code, _ in exitcodes.EXIT_CODES]
    assert codes == [0, 1, 2, 3, 130] and len(set(codes)) == len(codes)
    for code, meaning in exitcodes.EXIT_CODES:
        assert re.search(rf"^  {code} +{re.escape(meaning[:40])}", text, re.M), (code, text)
        # the README's table says the same, word for word
        assert f"| `{code}` | {meaning} |" in readme, code


# ---- help: an example per command -----------------------------------------------------------------
def test_every_command_has_examples_that_parse(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.chdir(TOP)
    monkeypatch.setenv("PMEMLAB_SYSFS", str(tmp_path / "no-module"))
    parser = cli.build_parser()
    commands = subcommands()
    assert {"info", "params", "run", "sweep", "targets", "summarize", "plot", "plot-all", "report", "compare",
            "abort"} <= set(commands)
    for name, sub in commands.items():
        help_text = sub.format_help()
        assert "examples:" in help_text, name
        lines = [ln.strip() for ln in help_text.split("examples:", 1)[1].splitlines() if ln.strip()]
        assert lines and all(ln.startswith("pmemlab ") for ln in lines), (name, lines)
        assert any(shlex.split(ln)[1:2] == [name] or name in shlex.split(ln) for ln in lines), name
        for line in lines:
            argv = shlex.split(line.split("  #")[0])[1:]
            args, extra = parser.parse_known_args(argv)  # a wrong example fails here (UsageError)
            assert not extra and args.command == name, line
            # the ones that need neither module nor results run as written; every sweep as a dry run
            # (its options checked together: a config's target axis, -o, the backend's options)
            if name == "sweep":
                assert cli.main([*argv, "--dry-run"] if "--dry-run" not in argv else argv) == 0, \
                    (line, capsys.readouterr().err)
            elif name in ("targets", "params") or "--list" in argv:
                assert cli.main(argv) == 0, (line, capsys.readouterr().err)
    # the top-level help has examples too, and they parse
    top = parser.format_help()
    for line in top.split("examples:", 1)[1].split("exit codes:", 1)[0].strip().splitlines():
        args, extra = parser.parse_known_args(shlex.split(line)[1:])
        assert not extra, line


# ---- --json on every command ----------------------------------------------------------------------
def test_every_command_takes_json() -> None:
    for name, sub in subcommands().items():
        assert any("--json" in a.option_strings for a in sub._actions), f"pmemlab {name} has no --json"


def json_of(capsys, argv: list[str], code: int = 0) -> object:
    assert cli.main(argv) == code, capsys.readouterr().err
    out = capsys.readouterr().out
    return json.loads(out)  # one document, nothing else on stdout


def test_json_documents_parse(env, capsys, tmp_path) -> None:
    fake, cfg, out = env
    info = json_of(capsys, ["info", "--json"])
    assert info["target"]["device"] == "/dev/pmem0" and "run_state" in info and "mitigations" in info
    params = json_of(capsys, ["params", "--json"])
    assert any(p["name"] == "access_size" for p in params)
    rows = json_of(capsys, ["run", "op=load", "access_size=64", "duration_ms=2", "--json"])
    assert rows[-1]["thread"] == "all" and rows[-1]["status"] == "ok"
    dry = json_of(capsys, ["sweep", str(cfg), "-o", str(out), "--dry-run", "--json"])
    assert dry["points"] == 4 and dry["runs"] == 12 and len(dry["point_list"]) == 4 and not out.parent.exists()
    done = json_of(capsys, ["sweep", str(cfg), "-o", str(out), "--json"])
    assert done["exit_code"] == 0 and done["ok"] == 12 and done["csv"] == str(out) and done["status"] == "complete"
    summary = json_of(capsys, ["summarize", str(out), "--json"])
    assert len(summary["points"]) == 4 and summary["summary"].endswith("t.summary.csv")
    assert {"n", "bw_gbps_mean", "cv_pct", "noisy", "target", "toolkit_version"} <= set(summary["points"][0])
    targets = json_of(capsys, ["targets", str(TOP / "configs" / "emulation.toml"), "--json"])
    assert targets and {"label", "insmod_args"} <= set(targets[0])
    recipes = json_of(capsys, ["plot", "--list", "--json"])
    assert any(r["name"] == "bw-threads" for r in recipes)
    plotted = json_of(capsys, ["plot", str(out), "-o", str(tmp_path / "p"), "--format", "png", "--json"])
    assert plotted["written"] and all(Path(p).exists() for p in plotted["written"])
    everything = json_of(capsys, ["plot-all", str(out.parent), "-o", str(tmp_path / "pa"), "--format", "png", "--json"])
    assert list(everything["written"]) == ["t"] and everything["failed"] == {}
    compared = json_of(capsys, ["compare", str(out), str(out), "--json"])
    assert compared["counts"]["no difference"] == 4
    report = json_of(capsys, ["report", str(out.parent), "-o", str(tmp_path / "rep"), "--json"])
    assert Path(report["html"]).exists() and Path(report["markdown"]).exists()
    aborted = json_of(capsys, ["abort", "--json"])
    assert aborted == {"state": "done", "abort_requested": False}


# ---- summarize --------------------------------------------------------------------------------------
def test_summarize_prints_the_table_and_writes_the_csv(env, capsys) -> None:
    fake, cfg, out = env
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    summary = out.with_name("t.summary.csv")
    summary.unlink()
    capsys.readouterr()
    assert cli.main(["summarize", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    header = printed[0].split()
    assert header[:4] == ["op", "access_size", "n", "metric"] and "CV" in header
    body = [ln.split() for ln in printed[1:5]]
    assert sorted((r[0], r[1]) for r in body) == [("load", "256"), ("load", "64"), ("ntstore", "256"),
                                                  ("ntstore", "64")]
    assert all(r[2] == "3" and r[3] == "bw_gbps" for r in body)
    assert printed[-1] == f"summary -> {summary}" and summary.exists()
    table = pd.read_csv(summary)
    for (_, r), line in zip(table.iterrows(), body):
        assert float(line[4]) == pytest.approx(r["bw_gbps_mean"], rel=1e-3)
    # --no-write prints and leaves the file alone
    summary.unlink()
    assert cli.main(["summarize", str(out), "--no-write"]) == 0 and not summary.exists()


def test_summary_keeps_target_and_conditions_so_targets_merge(env, capsys) -> None:
    fake, cfg, out = env
    dram, pmem = out.with_name("t@dram.csv"), out.with_name("t@pmem.csv")
    assert cli.main(["sweep", str(cfg), "-o", str(pmem), "--no-progress"]) == 0
    for name, value in (("target", "dram"), ("target_kind", "dram")):
        (fake.root / name).write_text(value + "\n")
    assert cli.main(["sweep", str(cfg), "-o", str(dram), "--no-progress"]) == 0
    both = pd.concat([read_rows(p.with_name(p.stem + ".summary.csv"), ("point_key", "n"), "summary CSV")
                      for p in (dram, pmem)], ignore_index=True)
    assert len(both) == 8 and set(both["target"]) == {"dram", "/dev/pmem0"}
    assert set(both["target_kind"]) == {"dram", "fsdax"}
    for column in ("hypervisor", "toolkit_version", "kernel", "mitigations", "thp_enabled", "cpu_model"):
        assert column in both, column
    assert both.groupby(["target", "op", "access_size"]).size().eq(1).all()  # one row per point and target


# ---- text columns stay text -----------------------------------------------------------------------
def test_text_columns_read_back_as_text(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    sink = CsvSink(path, BASE_COLUMNS)
    sink.ensure_header()
    rows = [{"sweep": "t", "point": 0, "point_key": "123456", "repeat": r, "thread": "all", "status": "ok",
             "error": "5" if r else "", "cpus": "0", "op": "load", "toolkit_version": "1234567",
             "module_version": "2", "run_id": "17", "hostname": "42", "bw_gbps": 1.5 + r,
             "governor": "performance", "turbo": "off", "mode": "bandwidth", "access_size": 64}
            for r in range(2)]
    sink.append(rows)
    df = read_rows(path)
    for column in ("toolkit_version", "cpus", "error", "status", "point_key", "thread", "module_version",
                   "hostname", "run_id", "op", "governor"):
        assert column in TEXT_COLUMNS
        assert df[column].dtype == object, column
    assert df["toolkit_version"].tolist() == ["1234567", "1234567"] and df["cpus"].tolist() == ["0", "0"]
    assert df["error"].tolist()[1] == "5" and pd.isna(df["error"].tolist()[0])
    assert df["point_key"].tolist() == ["123456", "123456"]
    assert df["bw_gbps"].dtype.kind == "f" and df["access_size"].dtype.kind == "i"
    # plain pandas would have guessed numbers: that is what the one reader prevents
    assert pd.read_csv(path)["toolkit_version"].dtype.kind == "i"
    # the summary keeps them as text too
    table = summarize_csv(path)
    table.to_csv(tmp_path / "s.csv", index=False)
    back = read_rows(tmp_path / "s.csv", ("point_key", "n"), "summary CSV")
    assert back["toolkit_version"].tolist() == ["1234567"] and back["point_key"].tolist() == ["123456"]


# ---- noise ------------------------------------------------------------------------------------------
def test_noise_rules_flag_points_and_the_sweep_warns(env, capsys) -> None:
    fake, cfg, out = env
    plain = fake.result_text

    def noisy(p: dict[str, str], run_no: int) -> str:
        text = plain(p, run_no)
        if p["op"] == "ntstore" and p["access_size"] == "256":  # one point varies by far more than 5 %
            factor = 1.6 if run_no % 2 else 1.0
            text = re.sub(r"bw_mbps=([\d.]+)", lambda m: f"bw_mbps={float(m.group(1)) * factor:.3f}", text)
        return text

    fake.result_text = noisy  # type: ignore[method-assign]
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    warning = [ln for ln in err.splitlines() if ln.startswith("pmemlab: warning: ")]
    assert len(warning) == 1 and "of 4 points should not be trusted" in warning[0]
    assert "vary by more than 5 % over their repeats" in warning[0] and "t.summary.csv" in warning[0]
    table = pd.read_csv(out.with_name("t.summary.csv"))
    flagged = table[table["noisy"] == 1]
    assert ("ntstore", 256) in set(zip(flagged["op"], flagged["access_size"]))
    row = table[(table["op"] == "ntstore") & (table["access_size"] == 256)].iloc[0]
    assert row["cv_pct"] > 5 and row["noise"].startswith("CV ") and row["metric"] == "bw_gbps"
    # summarize says so too, on stderr, and marks the row
    assert cli.main(["summarize", str(out)]) == 0
    both = capsys.readouterr()
    assert "should not be trusted" in both.err and "CV " in both.out


def test_noise_judgement() -> None:
    quiet = noise.judge([10.0, 10.1, 9.9])
    assert not quiet.noisy and quiet.cv_pct == pytest.approx(1.0, rel=1e-6)
    loud = noise.judge([10.0, 12.0, 8.0])
    assert loud.noisy and loud.reasons == ["CV 20.0 % > 5 %"]
    stolen = noise.judge([10.0, 10.0], steal=[0.2, 2.5])
    assert stolen.noisy and stolen.reasons == ["steal 2.5 % > 1 %"]
    assert not noise.judge([10.0]).noisy and noise.judge([10.0]).cv != noise.judge([10.0]).cv  # NaN: one repeat
    assert noise.steal_columns(["steal_pct", "steal_pct_max", "bw_gbps", "steal_ms"]) == ["steal_pct", "steal_ms"]
    table = pd.DataFrame({"noisy": [1, 0, 1], "cv_pct": [9.0, 1.0, 2.0], "steal_pct_max": [0.0, 0.0, 3.0]})
    text = noise.sweep_warning(table, "x.summary.csv")
    assert text.startswith("2 of 3 points should not be trusted") and "1 vary by more than 5 %" in text
    assert "1 lost more than 1 % of their CPU time to steal (up to 3 %)" in text
    assert noise.sweep_warning(table.assign(noisy=0)) == ""


# ---- bad input: one line, exit code 2, nothing written --------------------------------------------
def one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines()]
    if "one per line above" in lines[-1]:  # several problems: one line each (`where: what`), then the line
        assert all(": " in ln and not ln.startswith("pmemlab: ") for ln in lines[:-1]), err
        lines = lines[-1:]
    assert len(lines) == 1, err
    assert lines[0].startswith("pmemlab: ") and "; fix: " in lines[0], lines[0]
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def bad(tmp_path, monkeypatch):
    """A directory with things that are not what the commands want, and a check that nothing new
    appears in it."""
    root = tmp_path / "bad"
    root.mkdir()
    (root / "nonutf8.toml").write_bytes(b'[sweep]\nname = "x\xff"\n')
    (root / "ok.toml").write_text(CONFIG)
    (root / "foreign.csv").write_text("a,b\n1,2\n")
    (root / "empty.csv").write_text("")
    (root / "cut.csv").write_text("sweep,poi")
    (root / "binary.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "ragged.csv").write_text('sweep,point,point_key,repeat,thread,status\nt,0,"k\n')
    (root / "file").write_text("x")
    (root / "foreign-dir").mkdir()
    (root / "foreign-dir" / "x.csv").write_text("a,b\n1,2\n")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PMEMLAB_SYSFS", str(tmp_path / "no-module"))
    monkeypatch.setenv("PMEMLAB_RUNNER", str(tmp_path / "no-runner"))
    return root


BAD_INPUTS = [
    (["sweep", "nonutf8.toml", "--dry-run"], "nonutf8.toml:2: not UTF-8 text (byte 0xff at column 10)"),
    (["sweep", "nosuch.toml"], "cannot read config nosuch.toml"),
    (["sweep", "ok.toml", "--dry-run", "-o", "/proc/x.csv"], "-o /proc/x.csv: /proc cannot hold new files"),
    (["sweep", "ok.toml", "-o", "/proc/x.csv"], "-o /proc/x.csv: /proc cannot hold new files"),
    (["sweep", "ok.toml", "--dry-run", "-o", "/sys/x.csv"], "-o /sys/x.csv: /sys"),
    (["sweep", "ok.toml", "--dry-run", "-o", "file/x.csv"], "is a file, not a directory"),
    (["sweep", "ok.toml", "-o", "file/sub/x.csv"], "is a file, not a directory"),
    (["sweep", "ok.toml", "--dry-run", "-o", "results"], "-o results: not a NAME.csv name"),
    (["sweep", "ok.toml", "--dry-run", "-o", "foreign-dir/x.json"], "not a NAME.csv name"),
    (["sweep", "ok.toml", "--dry-run", "-o", "x.summary.csv"], "not a NAME.csv name"),
    (["sweep", "ok.toml", "--dry-run", "-o", "foreign-dir.csv/../" + "n" * 300 + ".csv"], "longer than 255 bytes"),
    (["sweep", "ok.toml", "--dry-run", "-o", "foreign.csv"], "foreign.csv exists and is not a pmemlab sweep CSV"),
    (["sweep", "ok.toml", "-o", "foreign.csv", "--fresh"], "foreign.csv exists and is not a pmemlab sweep CSV"),
    (["sweep", "ok.toml", "--dry-run", "-o", "binary.csv"], "binary.csv exists and is not a pmemlab sweep CSV"),
    (["sweep", "ok.toml", "--set", "op"], "--set 'op' is not KEY=VALUE"),
    (["sweep"], "sweep: the following arguments are required: config"),
    (["sweep", "ok.toml", "--bogus"], "sweep: unrecognized arguments: --bogus"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    ([], "the following arguments are required: COMMAND"),
    (["run", "--timeout", "nan"], "--timeout: 'nan': give a number of seconds > 0"),
    (["run", "--timeout", "-3"], "give a number of seconds > 0"),
    (["run", "--timeout", "5x"], "--timeout: '5x' is not a number of seconds (or 90s, 5m, 1h)"),
    (["probe", "--budget", "0m"], "--budget: '0m': give a number of seconds > 0"),
    (["probe", "--budget", "m"], "--budget: 'm' is not a number of seconds"),
    (["run", "access_size"], "argument 'access_size' is not KEY=VALUE"),
    (["run", "op=store+clwb", "mode=fast", "threads=x"], "invalid parameters: 2 problems, one per line above"),
    (["summarize", "foreign.csv"], "foreign.csv is not a sweep CSV: no columns sweep, point_key, repeat, thread"),
    (["summarize", "empty.csv"], "empty.csv is empty"),
    (["summarize", "cut.csv"], "cut.csv is empty (or cut short in its first line)"),
    (["summarize", "binary.csv"], "binary.csv is not a sweep CSV: not UTF-8 text"),
    (["summarize", "ragged.csv"], "ragged.csv is not a well-formed sweep CSV"),
    (["summarize", "nosuch.csv"], "nosuch.csv does not exist"),
    (["summarize", "foreign-dir"], "foreign-dir is not a sweep CSV"),
    (["plot", "foreign.csv"], "foreign.csv is not a sweep CSV"),
    (["plot", "empty.csv"], "empty.csv is empty"),
    (["plot", "cut.csv"], "cut short"),
    (["plot", "nosuch.csv"], "no such CSV: nosuch.csv"),
    (["plot", "--recipe", "nosuch", "foreign.csv"], "--recipe 'nosuch': no such recipe; fix: recipes: idle-latency"),
    (["plot"], "pmemlab: plot: no CSV given; fix: give the NAME.csv a sweep wrote (or --list for the recipes)"),
    (["plot", "foreign.csv", "--format", "gif"], "--format 'gif': unknown format gif"),
    (["plot-all", "/nonexistent"], "/nonexistent: no such directory"),
    (["plot-all", "file"], "file: not a directory"),
    (["plot-all", "foreign-dir"], "nothing to plot: no pmemlab sweep CSV under foreign-dir"),
    (["report", "/nonexistent"], "/nonexistent: no such directory"),
    (["report", "foreign-dir"], "no pmemlab sweep CSV under foreign-dir"),
    (["compare", "foreign.csv", "empty.csv"], "foreign.csv is not a sweep CSV"),
    (["compare", "nosuch.csv", "foreign.csv"], "nosuch.csv does not exist"),
    (["compare", "foreign-dir", "foreign-dir"], "no pmemlab sweep CSV under foreign-dir"),
    (["targets", "nonutf8.toml"], "not UTF-8 text"),
]


@pytest.mark.parametrize("argv,says", BAD_INPUTS, ids=[" ".join(a)[:60] or "(none)" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_code_2(bad, capsys, argv, says) -> None:
    before = tree(bad)
    foreign = (bad / "foreign.csv").read_bytes()
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == exitcodes.BAD_INPUT, err
    line = one_line(err)
    assert says in line, line
    assert tree(bad) == before  # nothing written, nothing taken over
    assert (bad / "foreign.csv").read_bytes() == foreign


def test_a_foreign_sidecar_or_histogram_is_not_overwritten(env, capsys) -> None:
    fake, cfg, out = env
    out.parent.mkdir(parents=True)
    for name, text in (("t.json", '{"mine": true}\n'), ("t.hist.csv", "x,y\n1,2\n")):
        path = out.with_name(name)
        path.write_text(text)
        assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 2
        assert f"{path} exists and is not a pmemlab" in one_line(capsys.readouterr().err)
        assert path.read_text() == text and not out.exists() and fake.runs == []
        path.unlink()
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0


def test_a_pmemlab_csv_without_its_sidecar_is_not_resumed(env, capsys) -> None:
    fake, cfg, out = env
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    out.with_suffix(".json").unlink()
    capsys.readouterr()
    fake.runs.clear()
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 2
    assert "is missing: nothing tells which config and target measured them" in one_line(capsys.readouterr().err)
    assert fake.runs == []
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress", "--fresh"]) == 0 and len(fake.runs) == 12


def test_a_cut_short_csv_is_read_without_its_torn_row(env, capsys) -> None:
    fake, cfg, out = env
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    text = out.read_text()
    out.write_text(text[: len(text) - 40])  # the last aggregate row cut in the middle
    assert len(read_rows(out)) == len(pd.read_csv(io.StringIO(text))) - 1
    capsys.readouterr()
    assert cli.main(["summarize", str(out), "--no-write"]) == 0


def test_unwritable_places(tmp_path, capsys) -> None:
    """A directory without permission (as an unprivileged user) and a read-only file system (a
    read-only tmpfs in a private mount namespace): one line, exit code 2, for sweep -o and plot -o."""
    cfg = tmp_path / "ok.toml"
    cfg.write_text(CONFIG)
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(locked, 0o555)
    cfg.chmod(0o644)
    env = {**os.environ, "PYTHONPATH": str(TOP / "userspace"), "PMEMLAB_SYSFS": str(tmp_path / "none")}
    cmd = [sys.executable, "-m", "pmemlab", "sweep", str(cfg), "--dry-run", "-o", str(locked / "x.csv")]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("setpriv needed to drop privileges")
        for parent in tmp_path.parents:  # let nobody reach the directory
            if parent == Path("/"):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o005)
        cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", *cmd[1:]]
    cp = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/")
    assert cp.returncode == 2, cp.stderr
    assert f"-o {locked / 'x.csv'}: {locked} is not writable by this user" in one_line(cp.stderr)
    assert list(locked.iterdir()) == []
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return
    ro = tmp_path / "ro"
    ro.mkdir()
    script = (f"mount -t tmpfs -o ro tmpfs {ro} && "
              f"{sys.executable} -m pmemlab sweep {cfg} --dry-run -o {ro}/sub/x.csv; echo rc=$?; "
              f"{sys.executable} -m pmemlab plot --list >/dev/null; "
              f"{sys.executable} -m pmemlab report {TOP / 'tests/host/fixtures/recorded'} -o {ro}/rep; echo rc=$?")
    cp = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env)
    if "rc=" not in cp.stdout:
        pytest.skip(f"no private mount namespace here: {cp.stderr.strip()[:200]}")
    assert cp.stdout.split() == ["rc=2", "rc=2"], cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 2 and all("is on a read-only file system; fix: choose" in ln for ln in lines), lines
    assert "Traceback" not in cp.stderr


def test_durations_are_read_one_way() -> None:
    """--timeout and probe's --budget take the same durations: seconds, or 90s, 5m, 1h."""
    from pmemlab.cli.args import positive_seconds

    assert [positive_seconds(t) for t in ("300", "2.5", "90s", "5m", " 1h ", "0.5m")] == [300, 2.5, 90, 300, 3600, 30]
    probe = cli.build_parser().parse_args(["probe", "--budget", "2m"])
    run = cli.build_parser().parse_args(["run", "--timeout", "2m"])
    assert probe.budget == run.timeout == 120.0

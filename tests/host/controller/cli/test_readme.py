"""README.md's controller section stays true: its CLI table names real commands and options,
its run example is valid, and its complete config example expands with `sweep --dry-run`."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess

import pytest

import pmemlab.cli as cli
import pmemlab.cli.args as cliargs
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab import params as P

from testlib import TOP

README = TOP / "README.md"


def section() -> str:
    text = README.read_text()
    return text.split("## The controller: `pmemlab`", 1)[1].split("\n## ", 1)[0]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    ap = cli.build_parser()
    action = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def table_commands() -> list[str]:
    rows = [ln for ln in section().splitlines() if ln.startswith("| `pmemlab ")]
    assert rows, "no CLI table in README.md"
    cmds = []
    for row in rows:
        first_cell = row.split(" | ")[0]
        cmds += re.findall(r"`(pmemlab [^`]+)`", first_cell)
    return cmds


def test_cli_table_names_real_commands_and_options():
    subs = subparsers()
    shown = set()
    for cmd in table_commands():
        words = cmd.replace("\\|", "|").split()
        name = words[1]
        assert name in subs, f"README.md: `{cmd}`: no command {name!r}"
        shown.add(name)
        known = subs[name]._option_string_actions
        for opt in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(words[2:])):
            assert opt in known, f"README.md: `{cmd}`: {name} has no option {opt}"
    assert set(subs) <= shown, f"commands missing from the README table: {sorted(set(subs) - shown)}"


def test_run_example_is_valid():
    m = re.search(r"Example: `pmemlab run ([^`]+)`", section())
    assert m
    values, problems = P.normalize(cliargs.parse_assignments(shlex.split(m.group(1))))
    assert problems == [] and not P.check_point(values)


def test_config_example_expands_with_dry_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", ""))
    blocks = re.findall(r"```toml\n(.*?)```", section(), re.S)
    assert len(blocks) == 1, "the controller section has one complete config example"
    config = tmp_path / "example.toml"
    config.write_text(blocks[0])
    rc = cli.main(["--sysfs", str(tmp_path / "no-module"), "sweep", str(config), "--dry-run", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    m = re.search(r"^bw-size: 72 combinations, (\d+) points after filters, (\d+) runs \(adaptive, at least\)", out, re.M)
    assert m, out
    points = int(m.group(1))
    assert 0 < points <= 72 and int(m.group(2)) == points * 3  # min_repeats = 3
    assert "(module not loaded: not checked)" in out and "output would go to results/bw-size.csv" in out


@pytest.mark.parametrize("phrase", ["--fresh", "Ctrl-C", "resumes"])
def test_resume_and_interrupt_are_described(phrase):
    assert phrase in section()


# ---------------------------------------------------------------------------------------------
# the one-liners' block, run as typed
# ---------------------------------------------------------------------------------------------
TOP = README.parent
NEEDS = ("pmem", "cxl")  # what a line may name that this host lacks (no NVDIMM, no CXL memory)


def one_liner_lines() -> list[str]:
    """The command lines of the fenced block after "The one-liners, as MLC users know them"."""
    text = section().split("The one-liners, as MLC users know them", 1)[1]
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md: no sh block after the one-liners' sentence"
    return [ln for ln in block.group(1).splitlines() if ln.strip()]


@pytest.mark.parametrize("line", one_liner_lines())
def test_one_liners_run_as_typed(line, tmp_path, monkeypatch):
    """Each line through `sh -c`, as a user pastes it, on this host without the module (the user
    backend): it runs and prints its table (and writes its -o), or, where it names memory this
    host lacks (pmem, cxl), answers in one line what is missing. The guests run the module's side
    (tests/guest/test_oneliners_on_module.py, test_cxl_first_steps.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMEMLAB_")}
    env["PATH"] = f"{TOP / '.venv' / 'bin'}:{env.get('PATH', '')}"
    env["PMEMLAB_SYSFS"] = str(tmp_path / "no-module")
    res = subprocess.run(["sh", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    words = shlex.split(line, comments=True)
    lacks = [w for w in NEEDS if any(w in part.split(",") or part == f"--{w}-node" for part in words)]
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    if res.returncode == 2:
        assert lacks, f"README.md: `{line}` refused: {res.stderr.strip()}"
        assert len(err) == 1 and err[0].startswith("pmemlab: ") and "; fix: " in err[0], res.stderr
        return
    assert res.returncode == 0, f"README.md: `{line}` exit {res.returncode}: {res.stderr.strip()[-2000:]}"
    assert res.stdout.strip() and "Traceback" not in res.stderr
    if "-o" in words:
        out = tmp_path / words[words.index("-o") + 1]
        assert out.is_file() and out.stat().st_size > 0, line

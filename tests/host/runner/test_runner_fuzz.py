"""Property tests of pmemlab-run's command line over generated input (hypothesis): whatever the
KEY=VALUE arguments, flags, target and stdin, the runner answers with a result (exit 0) or one
refusal line `pmemlab-run: ERRNO: reason` (exit 2), never dies of a signal, and changes no file
when it refuses; a run that goes ahead changes only its own target and raw_samples file.

Every path the generated arguments name is inside the test's temporary directory (the runner
runs there) or under a directory that does not exist, so "nothing outside tmp" is checked by
what the directory holds before and after. Sizes that would be valid are kept small (a valid
`dram_size=1T` would be filled, a valid `size=1T` fallocated): the strategy draws valid values
from a short list per key and invalid ones from anywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from testlib import TOP

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pmemlab.params import PARAM_NAMES  # noqa: E402

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
EXAMPLES = int(os.environ.get("PMEMLAB_FUZZ_EXAMPLES", "300"))  # more for a longer hunt
RUN_TIMEOUT_S = 30.0

# values a run may take, per key, all of them quick and small
VALID: dict[str, list[str]] = {
    "mode": ["bandwidth", "latency"], "threads": ["1", "2"],
    "op": ["load", "ntstore", "store+clwb", "store+clflushopt,load", "copy", "ntcopy", "chase"],
    "read_pct": ["0", "30", "100"], "width": ["0", "8", "16", "32"], "access_size": ["64", "256", "4K", "2M"],
    "stride": ["0", "512"], "window_offset": ["0", "4096", "1M"], "working_set": ["0", "1M", "64K"],
    "pattern": ["seq", "rand", "stride", "hotspot"], "hotspot_size": ["4096", "64K"], "passes": ["1", "3"],
    "pass_offset": ["0", "64"], "fence": ["none", "sfence", "mfence"], "fence_interval": ["0", "64", "256"],
    "flush": ["line", "access"], "cpus": ["", "0", "0-1", "1"], "placement": ["global", "per-thread", "per-dimm"],
    "interleave_ways": ["1", "2"], "interleave_gran": ["4096"], "dimms_per_thread": ["1", "2"],
    "duration_ms": ["5", "30"], "count": ["0", "100", "2000"], "delay_ticks": ["0", "200"], "probe": ["0", "1"],
    "seed": ["1", "42"], "prefetch": ["on", "off"], "cold": ["0", "1"], "samples": ["0", "10", "100"],
    "warm": ["0", "1"], "segment_ms": ["1", "5"], "warmup_ms": ["0", "10"], "chase_batch": ["16", "256"],
    "chase_page": ["0", "1"], "chase_write": ["none", "raw", "store"],
    "load_target": ["", "dram", "dram:0", "dram:x", "data", "/nonexistent/x"],
    # the runner's own options (the target)
    "dram_size": ["4M", "16M"], "dram_pages": ["4k", "2m", "hugetlb"], "dram_node": ["-1", "0", "7"],
    "size": ["4M", "8M", "12K"], "allow_overwrite": ["0", "1"], "allow_file": ["0", "1"],
    "tsc_khz": ["0", "2000000"], "raw_samples": ["samples.bin", "missing-dir/s.bin", ""],
}
assert set(PARAM_NAMES) <= set(VALID), set(PARAM_NAMES) - set(VALID)
TRICKY = ["", " ", "-1", "-0", "0x", "0x10", "1e3", "1.5", "nan", "99999999999999999999", "18446744073709551615",
          "18446744073709551616", "64K ", " 64", "6 4", "1P", "1T", "4097", "load,", ",load", "load,,store",
          "store+", "+clwb", "0-", "3-1", "0-99999", "%s%s%n", "é", "\t", "a" * 300, "store+clflushopt," * 300,
          "on,off", "2", "256", "4096", "65"]
TARGETS = ["dram", "dram:0", "dram:1", "dram:", "dram:x", "dram:-1", "data", "new", "empty", "dir", "/dev/null",
           "/nonexistent/x", "", "missing-dir/f"]
FLAGS = ["--check", "--facts", "--check-batch", "--schema", "--nosuch", "-x", "noequals", "=", "nosuch=1"]


def keyed() -> st.SearchStrategy[str]:
    key = st.sampled_from(sorted(VALID))
    return key.flatmap(lambda k: st.one_of(
        st.sampled_from(VALID[k]), st.sampled_from(TRICKY),
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12),
    ).map(lambda v, k=k: f"{k}={v}"))


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[list[str], str]:
    args = draw(st.lists(st.one_of(keyed(), keyed(), keyed(), st.sampled_from(FLAGS)), max_size=8))
    if draw(st.integers(0, 9)):  # mostly with a target, somewhere among the others
        args.insert(draw(st.integers(0, len(args))), f"target={draw(st.sampled_from(TARGETS))}")
    stdin = "\n".join(draw(st.lists(st.lists(keyed(), max_size=4).map(" ".join), max_size=3)))
    return args, stdin


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under root, with a digest of each file."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_runner(args: list[str], stdin: str, cwd: Path) -> tuple[int, str, str, bool]:
    """(exit code, stdout, stderr, stopped by us); a run longer than RUN_TIMEOUT_S gets SIGINT."""
    proc = subprocess.Popen([str(RUNNER), *args], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            env={**os.environ, "HOME": str(cwd), "LC_ALL": "C"})
    try:
        out, err = proc.communicate(stdin, timeout=RUN_TIMEOUT_S)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err, True


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


REFUSAL = re.compile(r"pmemlab-run: E[A-Z0-9]+: \S")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmd=command_lines())
def test_any_command_line_is_run_or_refused_in_one_line(cmd: tuple[list[str], str]) -> None:
    argv, stdin = cmd
    with tempfile.TemporaryDirectory(prefix="pmemlab-run-fuzz-") as d:
        work = Path(d)
        (work / "data").write_bytes(bytes(range(256)) * (8 << 12))  # 8 MiB a user would miss
        (work / "empty").write_bytes(b"")
        (work / "dir").mkdir()
        # the runner's defaults run for a second: short runs unless the arguments say otherwise
        args = ["duration_ms=20", "dram_size=8M", *[a.replace("target=data", f"target={work}/data")
                                                   .replace("target=new", f"target={work}/new")
                                                   .replace("target=empty", f"target={work}/empty")
                                                   .replace("target=dir", f"target={work}/dir") for a in argv]]
        before = snapshot(work)
        code, out, err, stopped = run_runner(args, stdin, work)
        assert code >= 0, f"killed by signal {-code}: {args}\n{err}"
        assert "Sanitizer" not in err and "Segmentation" not in err
        after = snapshot(work)
        if stopped:  # SIGINT: the run ends as aborted, with its results so far
            assert code == 1 and "#state error:aborted" in out, (args, code, err)
        elif code == 2:
            lines = err.strip().split("\n")
            assert lines and REFUSAL.match(lines[-1]), (args, err)
            assert not CONTROL.search(lines[-1]), f"a control character in the reason: {lines[-1]!r}"
            assert "thread=" not in out, args
        else:
            assert code == 0, (args, code, err)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        if code != 0:
            assert not changed, f"a refused run changed {changed}: {args}\n{err}"
        else:
            targets = {a.split("=", 1)[1] for a in args if a.startswith("target=")}
            mine = {str(Path(t).relative_to(work)) for t in targets if t.startswith(d)}
            samples = {a.split("=", 1)[1] for a in args if a.startswith("raw_samples=")}
            assert changed <= mine | samples, f"{changed} changed: {args}"
            runs = not any(f in args for f in ("--check", "--facts", "--check-batch", "--schema"))
            if runs and "--help" not in args:
                assert out.rstrip().endswith("#state done"), (args, out[-300:])

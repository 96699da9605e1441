"""No cycles between the C files: the objects of each binary (pmemlab-run, libplcore.so,
libpltest.so, and every object of pmemlab.ko, the glue in kmod/ and the core, for every built kernel
tree) read with nm, file A depending on file B when A leaves undefined a symbol (function or data)
B defines. A cycle is a set of files that depend on each other in a loop (a strongly connected set
of more than one file): none may exist, so that each file can be read, tested and replaced with
only the files below it in mind."""
from __future__ import annotations

import fcntl
import re
import subprocess
from pathlib import Path

import pytest

from testlib import TOP, cycles_in, headers_trees, load_vm_script

RUNNER = TOP / "userspace" / "runner"


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """The global symbols obj defines, and those it leaves undefined."""
    def names(*args: str) -> set[str]:
        out = subprocess.run(["nm", *args, str(obj)], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}
    return names("--defined-only", "--extern-only"), names("--undefined-only")


def depends(objs: list[Path], root: Path | None = None) -> dict[str, dict[str, set[str]]]:
    """file -> {file it depends on: the symbols it takes from it}; a file is named by its path
    under root (kmod/run.o beside core/ops.o), or by its name without one."""
    table = {str(o.relative_to(root)) if root else o.name: symbols(o) for o in objs}
    return {a: {b: ua & db for b, (db, _) in table.items() if b != a and ua & db}
            for a, (_, ua) in table.items()}


def cycles(deps: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The sets of files that depend on each other in a loop."""
    return cycles_in(deps)


def explain(deps: dict[str, dict[str, set[str]]], found: list[list[str]]) -> str:
    return "; ".join(f"{a} -> {b} ({', '.join(sorted(deps[a][b])[:4])})"
                     for comp in found for a in comp for b in comp if b in deps[a])


def test_the_cycle_finder_finds_a_loop_and_only_a_loop(tmp_path: Path) -> None:
    """Three files: a.c and b.c call each other (through c.c's data too), c.c calls nothing,
    d.c calls a: the one cycle is {a, b}, with the symbols that make it."""
    sources = {
        "a.c": "int b(int); extern int c_table[]; int a(int x) { return x ? b(x - 1) + c_table[0] : 0; }",
        "b.c": "int a(int); int b(int x) { return a(x); }",
        "c.c": "int c_table[4];",
        "d.c": "int a(int); int d(void) { return a(3); }",
    }
    objs = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text + "\n")
        obj = tmp_path / name.replace(".c", ".o")
        subprocess.run(["cc", "-c", "-o", str(obj), str(tmp_path / name)], check=True)
        objs.append(obj)
    deps = depends(objs)
    assert deps["a.o"] == {"b.o": {"b"}, "c.o": {"c_table"}}
    assert deps["c.o"] == {}
    found = cycles(deps)
    assert found == [["a.o", "b.o"]]
    assert explain(deps, found) == "a.o -> b.o (b); b.o -> a.o (a)"


def binaries() -> dict[str, list[str]]:
    """The objects of pmemlab-run, libplcore.so and libpltest.so, as the runner's Makefile links them."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(RUNNER), "objects"],
                         capture_output=True, text=True, check=True).stdout
    return {name: objs.split() for name, _, objs in (line.partition(": ") for line in out.splitlines())}


@pytest.mark.parametrize("binary", ["pmemlab-run", "libplcore.so", "libpltest.so"])
def test_no_cycle_between_the_runners_and_the_librarys_files(binary: str) -> None:
    res = subprocess.run(["make", "-s", "-C", str(RUNNER), binary], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    objs = [RUNNER / o for o in binaries()[binary]]
    assert len(objs) > 10 and all(o.exists() for o in objs)
    deps = depends(objs)
    found = cycles(deps)
    assert not found, f"{binary}: files that call each other in a loop: {explain(deps, found)}"


def module_objects() -> list[str]:
    """The objects of pmemlab.ko as Kbuild links them (its pmemlab-y, core/core.mk's list
    included), asked of make itself so that a file added to Kbuild or core.mk is read here."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Kbuild", "-f", "-", "src=.", "objects"],
                         input="objects:\n\t@echo $(pmemlab-y)\n", cwd=TOP,
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def test_the_modules_objects_are_read_from_kbuild() -> None:
    """Every glue file in kmod/ and every core file of core.mk, each once, and nothing else."""
    objs = module_objects()
    assert len(objs) == len(set(objs))
    assert {o for o in objs if o.startswith("kmod/")} == {
        f"kmod/{c.stem}.o" for c in (TOP / "kmod").glob("*.c")}
    text = (TOP / "core" / "core.mk").read_text().replace("\\\n", " ")
    core = re.search(r"^PL_CORE_SRC := (.*)$", text, re.M).group(1).split()
    assert {o for o in objs if o.startswith("core/")} == {f"core/{c[:-2]}.o" for c in core}
    assert all(o.startswith(("kmod/", "core/")) for o in objs)


TREES = headers_trees()


@pytest.mark.skipif(not TREES, reason="no kernel headers under /lib/modules/*/build (scripts/install-deps installs them)")
@pytest.mark.parametrize("release", [t.parent.name for t in TREES])
def test_no_cycle_between_the_modules_files(release: str) -> None:
    """The whole module, the glue (kmod/) and the core as the kernel compiles it (its
    #ifdef __KERNEL__ parts included), from the bed's own build of the module for each kernel
    (scripts/vm: make module W=1 into build/<release>/, which check-build leaves up to date)."""
    vm = load_vm_script()
    ko = vm.build_module(vm.Kernel.installed(release))
    assert ko is not None, f"no pmemlab.ko built for {release}"
    objs = [ko.parent / o for o in module_objects()]
    # read under the build lock: a check-build beside this test (FRESH=1) rebuilds the tree under it
    with open(ko.parent.parent / ".module-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        deps = depends(objs, ko.parent)
    assert any(a.startswith("kmod/") for a in deps) and any(a.startswith("core/") for a in deps)
    found = cycles(deps)
    assert not found, f"{release}: module files that call each other in a loop: {explain(deps, found)}"

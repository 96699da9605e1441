"""Every file of the repository README.md and docs/*.md cite exists: a path under one of the
repository's source directories (`core/check.c`, `scripts/vm`, `tests/host/core/test_engine.py`), a
module of the controller cited by its path in the package (`plots/style.py`, `pmemlab/cxl.py`, as
docs/controller.md names them), and a C file cited by its name alone (`check.c`, `safety.c`: one of
core/, kmod/ or userspace/runner/). A file renamed or moved without its docs fails here, naming
the document, the line and the path (issue 38 item 4: docs and comments cited files that had
moved or never were in the repository). Outputs (build/, results/, a report under plots/, what
make builds: `userspace/runner/pmemlab-run`) and placeholders (`configs/<experiment>.toml`,
`results/NAME.csv`) are not files of the repository."""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from testlib import TOP

DOCS = [TOP / "README.md", *sorted((TOP / "docs").glob("*.md"))]
# the directories of the repository's sources: a path that starts with one is checked from the top
SOURCE_DIRS = ("core", "kmod", "userspace", "tests", "scripts", "docs", "configs")
# the controller's package: its modules are cited by their path inside it (or from pmemlab/)
PACKAGE = TOP / "userspace" / "pmemlab"
PACKAGE_DIRS = ("pmemlab", *(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")))
# where a C file cited by its name alone lives
C_DIRS = (TOP / "core", TOP / "kmod", TOP / "userspace" / "runner")

PATH = re.compile(r"(?<![\w/.<$~-])((?:%s)/[\w./-]*)" % "|".join(sorted(set(SOURCE_DIRS + PACKAGE_DIRS))))
# build products (pmemlab-run, libplcore.so, *.ko): the names the repository's .gitignore files leave out
PRODUCTS = [ln.strip().strip("/") for f in (TOP / ".gitignore", TOP / "userspace" / "runner" / ".gitignore")
            if f.exists() for ln in f.read_text().splitlines() if ln.strip() and ln[0] not in "#!"]
C_NAME = re.compile(r"`([\w-]+\.(?:c|h|def|mk))`")
SOURCE_SUFFIXES = {".py", ".c", ".h", ".def", ".mk", ".md", ".toml", ""}


def cited(text: str) -> list[tuple[int, str]]:
    """(line, path) of every repository path the text cites; placeholders and globs left out."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            path = m.group(1).rstrip(".,:;")
            rest = line[m.end():m.end() + 1]
            if rest and rest in "<*{" or re.search(r"/[A-Z]+(\.|/|$)", path):
                continue  # a placeholder or a glob: configs/<name>.toml, results/NAME.csv, build/R/
            found.append((lineno, path))
    return found


def exists(path: str) -> bool:
    """Does the repository hold path, cited from the top or as a module of the package?"""
    first = path.split("/", 1)[0]
    if any(fnmatch.fnmatch(Path(path).name, pattern) for pattern in PRODUCTS):
        return True  # made by make, not held by the repository
    if first in SOURCE_DIRS:
        return (TOP / path).exists()
    if first == "pmemlab":
        return (PACKAGE.parent / path).exists()
    # plots/style.py is the package's, plots/README.md the top's; plots/report.html is an output,
    # targets/add a file of the module's sysfs directory: only a source file is the package's
    return Path(path).suffix not in SOURCE_SUFFIXES - {""} or (PACKAGE / path).exists() or (TOP / path).exists()


def test_the_finder_reads_paths_names_and_placeholders() -> None:
    """The finder on a made-up page: the cited paths, a placeholder and a glob left out."""
    text = ("`core/check.c` and kmod/safety.c; `configs/<name>.toml`, configs/*.toml, results/NAME.csv,\n"
            "(see `plots/style.py` `finish()`) and pmemlab/host/cxl.py. `userspace/runner/guard.c`")
    assert cited(text) == [(1, "core/check.c"), (1, "kmod/safety.c"), (2, "plots/style.py"),
                           (2, "pmemlab/host/cxl.py"), (2, "userspace/runner/guard.c")]
    assert [exists(p) for _, p in cited(text)] == [True, True, True, True, False]
    assert not exists("core/report.c") and not exists("host/guard.py") and not exists("plots/nothing.py")
    assert exists("plots/report.html") and exists("userspace/runner/libpltest.so")  # outputs, not sources
    assert C_NAME.findall("`check.c` and `resultfmt.c`, `guard.c`") == ["check.c", "resultfmt.c", "guard.c"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(TOP)))
def test_every_path_a_document_cites_exists(doc: Path) -> None:
    text = doc.read_text()
    missing = [f"{doc.relative_to(TOP)}:{n}: {p}" for n, p in cited(text) if not exists(p)]
    for lineno, line in enumerate(text.splitlines(), 1):
        missing += [f"{doc.relative_to(TOP)}:{lineno}: {name} (in none of core/, kmod/, userspace/runner/)"
                    for name in C_NAME.findall(line) if not any((d / name).exists() for d in C_DIRS)]
    assert not missing, "files cited that the repository does not hold (moved, renamed or never there):\n" + \
        "\n".join(missing)

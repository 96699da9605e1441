"""The gallery (docs/gallery, shown by the README) is what `make demo` renders: the demo's figures
from results recorded and rendered at one clean commit, named in gallery.json with each PNG's
SHA-256; this test fails once the recipes changed after that commit (the gallery would show
figures the code no longer draws). `plot-all --gallery` renders it only from results of the clean
commit the tree is at, and says why not otherwise."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import pmemlab.cli as cli
import pmemlab.plots.gallery as gallery_code

from testlib import HOST_FIXTURES, TOP

GALLERY = TOP / "docs" / "gallery"
RECORDED = HOST_FIXTURES / "recorded"


def demo_experiments() -> list[str]:
    """The experiments `make demo` runs (the Makefile's DEMO_CONFIGS)."""
    line = re.search(r"^DEMO_CONFIGS \?= \$\(addprefix configs/,(.*)\)$", (TOP / "Makefile").read_text(), re.M)
    assert line, "DEMO_CONFIGS in the Makefile"
    return [Path(name).stem for name in line.group(1).split()]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(TOP), *args], capture_output=True, text=True, timeout=60, check=False)


def test_gallery_shows_the_demo_as_rendered():
    """Every demo figure, as gallery.json says it was rendered (its SHA-256), and nothing else; the
    README shows each."""
    manifest = json.loads((GALLERY / gallery_code.GALLERY_MANIFEST).read_text())
    assert sorted(manifest["figures"]) == sorted(demo_experiments())
    readme = (TOP / "README.md").read_text()
    for name, entry in manifest["figures"].items():
        png = GALLERY / entry["png"]
        assert hashlib.sha256(png.read_bytes()).hexdigest() == entry["sha256"], f"{png} is not the one rendered"
        assert f"(docs/gallery/{entry['png']})" in readme
    assert sorted(p.name for p in GALLERY.glob("*.png")) == sorted(e["png"] for e in manifest["figures"].values())
    assert manifest["recipes"] == gallery_code.GALLERY_RECIPES and (TOP / gallery_code.GALLERY_RECIPES).is_dir()


def test_gallery_is_no_older_than_the_recipes_it_shows():
    """gallery.json's commit is in this history, and the recipes and the result reading they draw
    from (GALLERY_SOURCES) are as they were at it: else `make demo` on a clean tree renders it
    again (commit docs/gallery after). Their content decides, not the commits: a change undone
    since leaves the gallery current."""
    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git checkout: the gallery's commit cannot be compared")
    manifest = json.loads((GALLERY / gallery_code.GALLERY_MANIFEST).read_text())
    rev = manifest["revision"]
    if git("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        pytest.fail(f"docs/gallery was rendered at {rev[:12]}, a commit this history lacks: make demo on a clean tree")
    assert git("merge-base", "--is-ancestor", rev, "HEAD").returncode == 0, f"{rev[:12]} is not an ancestor of HEAD"
    changed = git("diff", "--name-only", rev, "HEAD", "--", *gallery_code.GALLERY_SOURCES).stdout.split()
    since = git("log", "--format=%h %s", f"{rev}..HEAD", "--", *changed).stdout.strip().splitlines() if changed else []
    assert not changed, (f"docs/gallery was rendered at {rev[:12]}, older than the recipes it shows (changed since: "
                       f"{'; '.join(since)}): run make demo on a clean tree and commit docs/gallery")


@pytest.fixture
def demo_results(tmp_path) -> Path:
    out = tmp_path / "results"
    out.mkdir()
    for name in demo_experiments():
        for suffix in (".csv", ".json", ".hist.csv", ".summary.csv"):
            if (RECORDED / f"{name}{suffix}").exists():
                shutil.copy(RECORDED / f"{name}{suffix}", out / f"{name}{suffix}")
    return out


def test_plot_all_renders_a_gallery_only_at_the_results_commit(demo_results, tmp_path, capsys, monkeypatch):
    """The recorded results come from their own commit: a tree elsewhere (or modified) renders no
    gallery and says why; at that commit, clean, the gallery and its manifest are written (the
    PNGs plot-all made, their hashes, the commit) and a figure of an experiment not shown is removed."""
    recorded = json.loads((demo_results / "idle-latency.json").read_text())["toolkit"]["revision"]
    gallery = tmp_path / "gallery"
    monkeypatch.setattr(gallery_code, "git_head", lambda top=None: ("f" * 40, True))
    assert cli.main(["plot-all", str(demo_results), "-o", str(tmp_path / "plots"), "--gallery", str(gallery),
                     "--format", "png"]) == 0
    err = capsys.readouterr().err
    assert f"gallery {gallery} not updated: the results come from {recorded}, the tree is at ffffffffffff" in err
    assert not gallery.exists()
    monkeypatch.setattr(gallery_code, "git_head", lambda top=None: (recorded + "0" * (40 - len(recorded)), False))
    assert cli.main(["plot-all", str(demo_results), "-o", str(tmp_path / "plots"), "--gallery", str(gallery),
                     "--format", "png"]) == 0
    assert "the tree is modified" in capsys.readouterr().err and not gallery.exists()
    gallery.mkdir()
    (gallery / "old-experiment.png").write_bytes(b"x")
    monkeypatch.setattr(gallery_code, "git_head", lambda top=None: (recorded + "0" * (40 - len(recorded)), True))
    assert cli.main(["plot-all", str(demo_results), "-o", str(tmp_path / "plots"), "--gallery", str(gallery),
                     "--format", "png"]) == 0
    manifest = json.loads((gallery / gallery_code.GALLERY_MANIFEST).read_text())
    assert manifest["revision"].startswith(recorded) and sorted(manifest["figures"]) == sorted(demo_experiments())
    for name, entry in manifest["figures"].items():
        png = gallery / entry["png"]
        assert png.read_bytes() == (tmp_path / "plots" / f"{name}.png").read_bytes()
        assert hashlib.sha256(png.read_bytes()).hexdigest() == entry["sha256"]
    assert not (gallery / "old-experiment.png").exists()
    assert f"gallery {gallery} rendered at {recorded}" in capsys.readouterr().out

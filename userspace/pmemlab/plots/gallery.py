"""The gallery (docs/gallery, shown by the README): the figures of `make demo`, rendered by
`pmemlab plot-all --gallery` only from results recorded at the clean commit the tree is at, with a
gallery.json naming that commit and each PNG's SHA-256 (tests/host/test_gallery.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

from pmemlab.analysis.resultset import load_results
from pmemlab.host.machine import git_head
from pmemlab.plots.recipes import ALL_RECIPES
from pmemlab.plots.render import fallback_figure, recipe_figure, save_figure


def gallery_problem(revisions: dict[str, set[str]]) -> str:
    """Why figures of results recorded at these toolkit revisions (revision -> experiments) do
    not make one gallery: several revisions, or a modified tree (-dirty); '' when they do."""
    if not revisions:
        return ""
    dirty = sorted(r for r in revisions if r.endswith("-dirty"))
    parts = []
    if len(revisions) > 1:
        parts.append(f"the results come from {len(revisions)} revisions ("
                     + "; ".join(f"{r}: {', '.join(sorted(n))}" for r, n in sorted(revisions.items())) + ")")
    if dirty:
        parts.append(f"{', '.join(dirty)} {'is a modified tree' if len(dirty) == 1 else 'are modified trees'}")
    return " and ".join(parts) + ("; record them again from one clean commit" if parts else "")


GALLERY_MANIFEST = "gallery.json"
GALLERY_RECIPES = "userspace/pmemlab/plots"  # what a gallery shows: figures drawn by this code
# the code a gallery's figures come from: the recipes, and the results read and summed up for them
GALLERY_SOURCES = (GALLERY_RECIPES, "userspace/pmemlab/analysis/resultset.py", "userspace/pmemlab/analysis/stats.py")


def gallery_revision_problem(revisions: dict[str, set[str]]) -> str:
    """Why results recorded at `revisions` cannot become the gallery rendered by this tree: it is
    not a git checkout, it is modified, or the results come from another commit ('' : they can)."""
    head = git_head()
    if head is None:
        return "not a git checkout: a gallery names the commit it was rendered at"
    commit, clean = head
    if not clean:
        return "the tree is modified: commit first, then make demo renders the gallery at that commit"
    recorded = sorted(revisions)
    if len(recorded) != 1 or not commit.startswith(recorded[0].split("-g")[-1]):
        return (f"the results come from {', '.join(recorded) or 'no recorded revision'}, the tree is at "
                f"{commit[:12]}: run the sweeps again")
    return ""


def write_gallery(out: Path, groups: dict[str, list[Path]], written: dict[str, list[Path]] | None = None) -> dict[str, str]:
    """The figures of `groups` as the gallery `out`: NAME.png each (as plot-all renders them, at
    150 dpi: the PNG it `written` when there is one), a gallery.json naming the commit they were
    recorded and rendered at and each PNG's SHA-256; PNGs of experiments no longer shown are
    removed."""
    head = git_head()
    assert head is not None  # gallery_revision_problem said so
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    for name, paths in sorted(groups.items()):
        made = [p for p in (written or {}).get(name, []) if p.suffix == ".png"]
        if made:
            png = out / f"{name}.png"
            if made[0].resolve() != png.resolve():
                shutil.copyfile(made[0], png)
        else:
            fig = recipe_figure(load_results(paths)) if name in ALL_RECIPES else fallback_figure(load_results(paths))
            (png,) = save_figure(fig, out, name, ("png",))
        figures[name] = {"png": png.name, "sha256": hashlib.sha256(png.read_bytes()).hexdigest()}
    for stale in out.glob("*.png"):
        if stale.stem not in figures:
            stale.unlink()
    manifest = {"revision": head[0], "recipes": GALLERY_RECIPES,
                "rendered_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "figures": figures}
    (out / GALLERY_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return {"revision": head[0], "manifest": str(out / GALLERY_MANIFEST)}

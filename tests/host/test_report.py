"""`pmemlab report`: the HTML page is rendered by a real headless browser (chromium, driven over
the DevTools protocol), which must lay out every figure at a non-zero size, every table with its
rows and the EMULATED mark, while fetching nothing but the page itself and its data: URIs. The
Markdown twin links figures that exist. The noise warnings follow their rules on synthetic runs
with known spread."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

import pmemlab.cli as cli
from pmemlab.plots.data import find_experiments, load_results
from pmemlab.report import CV_WARN, FEW_REPEATS, build_sections, point_table

RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The report of the recorded fixtures: (results dir, report.html, report.md)."""
    results = tmp_path_factory.mktemp("results")
    for path in RECORDED.iterdir():
        if path.suffix in (".csv", ".json"):
            shutil.copy(path, results / path.name)
    out = tmp_path_factory.mktemp("report")
    assert cli.main(["report", str(results), "-o", str(out)]) == 0
    return results, out / "report.html", out / "report.md"


# --------------------------------------------------------------------------
# the page in a real browser
# --------------------------------------------------------------------------
PAGE_FACTS = """(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const figures = [...document.querySelectorAll('section figure')].map(f => {
    const img = f.querySelector('img, svg');
    const [w, h] = box(img);
    return {section: f.closest('section').id, tag: img.tagName.toLowerCase(), w, h,
            natural: img.naturalWidth || 0, complete: img.complete !== false,
            caption: (f.querySelector('figcaption') || {}).textContent || ''};
  });
  const tables = [...document.querySelectorAll('table')].map(t => {
    const [w, h] = box(t);
    return {section: (t.closest('section') || {}).id || '', rows: t.querySelectorAll('tbody tr').length,
            headers: [...t.querySelectorAll('thead th')].map(th => th.textContent), w, h};
  });
  const mark = document.getElementById('emulated-mark');
  return JSON.stringify({figures, tables, title: document.title,
                         mark: mark ? {text: mark.textContent, h: box(mark)[1]} : null,
                         scripts: document.scripts.length});
})()"""


def chromium_args(profile: Path) -> list[str]:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium is not installed (scripts/install-deps installs Debian's chromium)")
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"]


async def devtools_page(port: int, url: str) -> tuple[dict, list[str]]:
    """Load `url` in the browser's page; return the page's facts and every URL it requested."""
    import websockets

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
        targets = json.load(resp)
    ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
    requests: list[str] = []
    async with websockets.connect(ws_url, max_size=None) as ws:
        counter = 0

        async def call(method: str, **params) -> dict:
            nonlocal counter
            counter += 1
            mine = counter
            await ws.send(json.dumps({"id": mine, "method": method, "params": params}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if msg.get("method") == "Network.requestWillBeSent":
                    requests.append(msg["params"]["request"]["url"])
                if msg.get("id") == mine:
                    assert "error" not in msg, msg
                    return msg["result"]

        await call("Network.enable")
        await call("Page.enable")
        await call("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = await call("Runtime.evaluate", expression="document.readyState", returnByValue=True)
            if state["result"]["value"] == "complete":
                break
            await asyncio.sleep(0.2)
        facts = await call("Runtime.evaluate", expression=PAGE_FACTS, returnByValue=True)
    return json.loads(facts["result"]["value"]), requests


def render_in_chromium(path: Path, profile: Path) -> tuple[dict, list[str]]:
    pytest.importorskip("websockets", reason="python3-websockets is not installed (scripts/install-deps)")
    proc = subprocess.Popen(chromium_args(profile), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited with {proc.returncode}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port in 60 s"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        return asyncio.run(devtools_page(port, path.resolve().as_uri()))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_report_renders_in_a_browser(report, tmp_path):
    results, html_path, _md = report
    facts, requests = render_in_chromium(html_path, tmp_path / "profile")
    experiments = find_experiments(results)
    assert facts["title"] == f"pmemlab report: {results}"
    figures = facts["figures"]
    assert sorted(f["section"] for f in figures) == sorted(f"exp-{name}" for name in experiments)
    for fig in figures:
        assert fig["w"] > 300 and fig["h"] > 150 and fig["natural"] > 300 and fig["complete"], fig
        assert fig["caption"].startswith(fig["section"][4:] + " · target:")
    tables = facts["tables"]
    csvs = sum(len(paths) for paths in experiments.values())
    per_csv = next(t for t in tables if t["headers"][:2] == ["experiment", "CSV"])
    assert per_csv["rows"] == csvs and per_csv["h"] > 0
    for name in experiments:
        table = next((t for t in tables if t["section"] == f"exp-{name}"), None)
        expected = len(point_table(load_results(experiments[name])))
        assert table is not None and table["rows"] == min(expected, 200) and table["w"] > 0, name
    assert facts["mark"] and facts["mark"]["text"].startswith("EMULATED: run under a hypervisor") and facts["mark"]["h"] > 0
    assert facts["scripts"] == 0
    assert requests and all(u.startswith(("file:", "data:")) for u in requests), "no external requests"
    assert requests[0] == html_path.resolve().as_uri()


def test_markdown_twin_links_existing_figures(report):
    results, html_path, md_path = report
    text = md_path.read_text(encoding="utf-8")
    assert text.startswith("> **EMULATED: run under a hypervisor")
    experiments = find_experiments(results)
    for name in experiments:
        link = f"![{name}](report-figures/{name}.png)"
        assert link in text
        png = md_path.parent / "report-figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tables = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(tables) > sum(len(p) for p in experiments.values()) + 15


# --------------------------------------------------------------------------
# noise warnings on runs with a known spread
# --------------------------------------------------------------------------
def synthetic_results(tmp_path: Path, bw: dict[int, list[float]], steal: float | None = None,
                      conditions: tuple[str, str] = ("none", "no")) -> Path:
    """A sweep 'custom' of one op at the thread counts of `bw`, one run per value (repeats)."""
    base = pd.read_csv(RECORDED / "bw-threads.csv", dtype={"thread": str})
    template = base[(base["thread"] == "all") & (base["status"] == "ok")].iloc[0]
    rows = []
    for threads, values in bw.items():
        for repeat, value in enumerate(values):
            row = template.copy()
            row["sweep"], row["threads"], row["repeat"] = "custom", threads, repeat
            row["point_key"] = f"p{threads}"
            row["bw_gbps"] = value
            row["hypervisor"], row["target_emulated"] = conditions
            if steal is not None:
                row["steal_pct"] = steal
            rows.append(row)
    out = tmp_path / "results"
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "custom.csv", index=False)
    return out


def test_noise_warnings_follow_their_rules(tmp_path):
    quiet = [10.0, 10.1, 9.9]  # CV 1 %
    noisy = [10.0, 12.0, 8.0]  # CV 20 %
    results_dir = synthetic_results(tmp_path, {1: quiet, 2: noisy, 4: [10.0, 10.2]}, steal=3.5)
    (section,) = build_sections(results_dir)
    table = section.table.set_index("threads")
    assert table.loc[2, "cv_pct"] == pytest.approx(20.0) and table.loc[1, "cv_pct"] == pytest.approx(1.0)
    assert table.loc[1, "mean"] == pytest.approx(10.0) and table.loc[4, "repeats"] == 2
    warnings = " | ".join(section.warnings)
    assert f"1 of 3 points vary by more than {CV_WARN:.0%}" in warnings and "worst 20 % at threads=2" in warnings
    assert f"1 of 3 points have fewer than {FEW_REPEATS} repeats (2)" in warnings
    assert "steal time above 1 % in 8 rows (steal_pct up to 3.5)" in warnings
    assert section.notice == "", "bare metal, real pmem: no mark"
    quiet_dir = synthetic_results(tmp_path / "q", {1: quiet, 2: quiet})
    (calm,) = build_sections(quiet_dir)
    assert calm.warnings == []
    html_path = tmp_path / "r" / "report.html"
    assert cli.main(["report", str(quiet_dir), "-o", str(html_path.parent)]) == 0
    page = html_path.read_text()
    assert "id=emulated-mark" not in page and "None: every point has at least 3 repeats" in page


def test_report_of_an_empty_directory_says_so(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "no pmemlab sweep CSV under" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path / "nope")]) == 2
    assert "nope: no such directory" in capsys.readouterr().err

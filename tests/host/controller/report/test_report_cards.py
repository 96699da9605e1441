"""`pmemlab report` and the device cards (issue 35 point 3): a card found under the results gets a
section (its table, evidence, undecided list, run conditions and figures) in the HTML page and
its Markdown twin; a probe's probe.csv is not taken for a sweep; a corrupt card.json is one line
of warning. The card is drawn by `pmemlab probe --from` from a recorded probe
(fixtures/probe_dram: probe.csv and card.json of a 40 s user-backend probe of this host's DRAM)."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest

import pmemlab.cli as cli
from pmemlab.analysis import card as C
from pmemlab.analysis.resultset import find_experiments
from pmemlab.report.cards import EMULATED_CARD

from testlib import HOST_FIXTURES

FIXTURES = HOST_FIXTURES
PROBE = FIXTURES / "probe_dram"
RECORDED = FIXTURES / "recorded"


def probe_from(source: Path, out: Path) -> dict:
    """`pmemlab probe --from source -o out`: the card drawn again from saved measurements."""
    assert cli.main(["probe", "--from", str(source), "-o", str(out)]) == 0
    return json.loads((out / "card.json").read_text())


def with_sweep(results: Path) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    for name in ("bw-size.csv", "bw-size.json"):
        shutil.copy(RECORDED / name, results / name)
    return results


def report(results: Path, out: Path) -> tuple[str, str]:
    assert cli.main(["report", str(results), "-o", str(out)]) == 0
    return (out / "report.html").read_text(), (out / "report.md").read_text()


@pytest.fixture(scope="module")
def carded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str, str]:
    base = tmp_path_factory.mktemp("cards")
    results = with_sweep(base / "results")
    doc = probe_from(PROBE, results / "probe-dram")
    page, md = report(results, base / "rep")
    return base, doc, page, md


def test_the_report_has_a_section_per_card(carded) -> None:
    base, doc, page, md = carded
    assert C.validate(doc) == [] and not doc["emulated"]
    assert "<section id=device-cards><h2>Device cards</h2>" in page and "## Device cards" in md
    assert "Device card: dram (user backend, probe-dram)" in page and "### Device card: dram (user backend, probe-dram)" in md
    assert page.index("id=device-cards") > page.index("exp-bw-size")
    assert "<a href='#device-cards'>device cards</a></nav>" in page
    card_md = md.split("## Device cards", 1)[1]
    card_html = page.split("id=device-cards", 1)[1]
    for inf in doc["inferences"]:  # each inference's name, value, confidence and method, as the card holds them
        value = C.value_text(inf)
        row = next(ln for ln in card_md.splitlines() if ln.startswith(f"| {inf['name']} |"))
        assert f"| {value} |" in row and f"| {inf['confidence']:.2f} |" in row and inf["method"] in row
        assert f"<td>{html.escape(inf['name'])}</td><td>{html.escape(value)}</td>" in card_html
        if inf["uncertain"]:
            assert f"uncertain: {inf['reason']}" in row
        # the evidence folded: every point the inference rests on
        assert f"<summary>Evidence of {inf['name']} ({len(inf['evidence'])} points)</summary>" in card_html
        assert f"<summary>Evidence of {inf['name']} ({len(inf['evidence'])} points)</summary>" in card_md
    levels = next(i for i in doc["inferences"] if i["name"] == "levels")
    assert not levels["uncertain"] and levels["value"]  # the recorded DRAM curve has knees
    evidence = card_md.split("Evidence of levels", 1)[1].split("</details>", 1)[0]
    assert len([ln for ln in evidence.splitlines() if ln.startswith("| ") and "size_bytes" not in ln and "---" not in ln]) == len(levels["evidence"])
    for u in doc["undecided"]:
        assert f"- {u['name']}: {u['reason']}" in card_md
        assert f"<li>{html.escape(u['name'])}: {html.escape(u['reason'])}</li>" in card_html
    assert "<summary>Run conditions of the probe</summary>" in card_html
    assert f"| hypervisor | {doc['conditions']['hypervisor']} |" in card_md
    assert EMULATED_CARD not in page and EMULATED_CARD not in md
    # the figures beside the card: inlined in the page, copied for the Markdown twin
    for name in ("levels", "read_granularity", "interleave"):
        assert f"alt='card-probe-dram {name}'" in card_html
        link = f"report-figures/card-probe-dram-{name}.png"
        assert f"]({link})" in card_md and (base / "rep" / link).stat().st_size > 0


def test_a_probe_csv_is_not_a_sweep(carded) -> None:
    """The probe's probe.csv carries a run's full result row; the report (and every reader of
    results) skips it: no section drawn from it, only the sweep's."""
    base, _, page, md = carded
    assert list(find_experiments(base / "results")) == ["bw-size"]
    assert page.count("<section id='exp-") == 1 and "<section id='exp-bw-size'>" in page
    assert "probe.csv" not in page and "probe.csv" not in md


def test_a_results_dir_of_a_probe_alone(tmp_path) -> None:
    """A results directory holding only a probe's directory reports its card (no sweep section)."""
    doc = probe_from(PROBE, tmp_path / "results" / "probe-dram")
    page, md = report(tmp_path / "results", tmp_path / "rep")
    assert "<section id='exp-" not in page and "Device card: dram" in page and "### Device card: dram" in md
    for inf in doc["inferences"]:
        assert f"| {inf['name']} | {C.value_text(inf)} |" in md


def test_an_emulated_card_shows_the_mark(tmp_path) -> None:
    """A card measured under TCG (hypervisor qemu in its run conditions): the section says the
    timings mean nothing, and every inference's row carries the mark."""
    src = tmp_path / "recorded"
    shutil.copytree(PROBE, src)
    meta = json.loads((src / "card.json").read_text())
    meta["conditions"]["hypervisor"] = "qemu"
    (src / "card.json").write_text(json.dumps(meta))
    results = with_sweep(tmp_path / "results")
    doc = probe_from(src, results / "probe-tcg")
    assert doc["emulated"]
    page, md = report(results, tmp_path / "rep")
    assert f"<p class=mark>{html.escape(EMULATED_CARD)}</p>" in page and f"> **{EMULATED_CARD}**" in md
    rows = [ln for ln in md.split("## Device cards", 1)[1].splitlines()
            if any(ln.startswith(f"| {i['name']} |") for i in doc["inferences"])]
    assert len(rows) == len(doc["inferences"]) and all("EMULATED: timing means nothing" in r for r in rows)


@pytest.mark.parametrize("text, says", [("{\"schema\": \"pmemlab-card/1\", \"inferences\": [", "not JSON"),
                                        ("{\"schema\": \"something-else\"}", "schema")])
def test_a_corrupt_card_is_one_line_of_warning(tmp_path, capsys, text, says) -> None:
    results = with_sweep(tmp_path / "results")
    (results / "probe-bad").mkdir()
    (results / "probe-bad" / "card.json").write_text(text)
    page, md = report(results, tmp_path / "rep")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    warn = page.split("id=card-warnings>", 1)[1].split("</div>", 1)[0]
    assert warn.count("<li>") == 1 and "probe-bad/card.json" in warn and says in warn
    lines = [ln for ln in md.splitlines() if "probe-bad/card.json" in ln]
    assert len(lines) == 1 and lines[0].startswith("- **Warning**:") and says in lines[0]
    assert "### Device card:" not in md

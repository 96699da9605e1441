"""`pmemlab probe` end to end on the user backend on this host (a small budget: structure, not
speed), the card's schema, `--from` re-deriving the card from the saved CSV, and the one-line
errors with their documented exit codes (issue 35 points 2-3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmemlab import exitcodes
from pmemlab.analysis import card as C
from pmemlab.cli import main
from pmemlab.cli import probe as probe_cli

RUNNER = Path(__file__).resolve().parents[2] / "userspace" / "runner" / "pmemlab-run"


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    if not RUNNER.exists():
        pytest.skip("pmemlab-run not built (make userspace)")
    out = tmp_path_factory.mktemp("probe") / "card"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["probe", "--target", "dram", "--budget", "25s", "-o", str(out)])
    return out, code, buf.getvalue()


def test_probe_writes_measurements_card_and_figures(probed):
    out, code, text = probed
    assert code == exitcodes.OK
    for name in ("probe.csv", "card.json", "levels.png", "read_granularity.png", "interleave.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    doc = json.loads((out / "card.json").read_text())
    assert C.validate(doc) == []
    assert {i["name"] for i in doc["inferences"]} == {"levels", "read_granularity", "interleave"}
    assert doc["wall_s"] <= doc["budget_s"] + 30  # the budget bounds measuring; the last run may overrun
    for inf in doc["inferences"]:
        assert inf["evidence"], inf["name"]  # every line names the points it rests on
    assert "device card: dram" in text and "read_granularity" in text
    import pandas as pd
    rows = pd.read_csv(out / "probe.csv")
    assert set(rows["curve"]) == {"chase", "randread"}
    assert rows[rows["curve"] == "chase"]["size"].min() == probe_cli.MIN_SIZE


def test_from_reproduces_the_card(probed, capsys):
    out, _, _ = probed
    saved = json.loads((out / "card.json").read_text())
    assert main(["probe", "--from", str(out), "--json"]) == exitcodes.OK
    again = json.loads(capsys.readouterr().out)
    assert again["inferences"] == json.loads(json.dumps(saved["inferences"]))
    assert C.validate(again) == []


def test_from_tampered_csv_changes_the_card(probed, tmp_path, capsys):
    """--from really infers from the CSV: a chase curve made flat loses its knees."""
    out, _, _ = probed
    import pandas as pd
    rows = pd.read_csv(out / "probe.csv")
    rows.loc[rows["curve"] == "chase", "value"] = 5.0
    (tmp_path / "d").mkdir()
    rows.to_csv(tmp_path / "d" / "probe.csv", index=False)
    (tmp_path / "d" / "card.json").write_text((out / "card.json").read_text())
    assert main(["probe", "--from", str(tmp_path / "d"), "--json"]) == exitcodes.OK
    levels = next(i for i in json.loads(capsys.readouterr().out)["inferences"] if i["name"] == "levels")
    assert levels["uncertain"] and levels["value"] is None


@pytest.mark.parametrize("argv", [
    ["probe", "--budget", "0"], ["probe", "--budget", "5 minutes"], ["probe", "--backend", "both"],
    ["probe", "--from", "/nonexistent/probe-dir"],
])
def test_bad_input_one_line_exit_2(argv, capsys):
    assert main(argv) == exitcodes.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err


def test_from_a_directory_without_measurements(tmp_path, capsys):
    (tmp_path / "probe.csv").write_text("a,b\n1,2\n")
    assert main(["probe", "--from", str(tmp_path)]) == exitcodes.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a probe's measurements" in err[0]


def test_output_is_a_file(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    if not RUNNER.exists():
        pytest.skip("pmemlab-run not built")
    assert main(["probe", "--budget", "1s", "-o", str(f)]) == exitcodes.BAD_INPUT
    assert "not a directory" in capsys.readouterr().err


def test_module_without_chase_is_one_line(fake, tmp_path, capsys, monkeypatch):
    """A module that refuses op=chase (one built before its own chase): one readable line, exit 1.
    The stand-in module judges with this tree's validator, which takes chase: it is made to
    refuse it here."""
    from pmemlab.errors import ParamRefused

    def refuse_chase(self, *args, **kwargs):
        raise ParamRefused("op", "chase", "op chase: not in this backend")

    monkeypatch.setattr(probe_cli.Prober, "chase", refuse_chase)
    code = main(["probe", "--backend", "kernel", "--budget", "5s", "-o", str(tmp_path / "k")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == exitcodes.FAILED, err
    assert len(err) == 1 and "no pointer chase" in err[0] and "--backend user" in err[0], err


def test_the_module_backend_draws_a_card(fake, tmp_path):
    """The module's own chase (issue 35 point 1): the probe runs on the kernel backend (the stand-in
    module here) and writes a card that passes the schema check."""
    out = tmp_path / "k"
    assert main(["probe", "--backend", "kernel", "--budget", "5s", "-o", str(out)]) == exitcodes.OK
    doc = json.loads((out / "card.json").read_text())
    assert doc["backend"] == "kernel" and C.validate(doc) == []


def test_emulated_card_marks_every_inference(probed):
    out, _, _ = probed
    rows, meta = probe_cli.load_rows(out)
    cond = dict(meta["conditions"], hypervisor="qemu")
    doc, _ = probe_cli.build_card(rows, cond, target="dram", backend="user", caches=[], budget_s=1,
                                  wall_s=1, stopped="budget")
    assert doc["emulated"] and all(i["emulated"] for i in doc["inferences"])
    assert C.validate(doc) == []
    broken = json.loads(json.dumps(doc))
    broken["inferences"][0]["emulated"] = False
    assert C.validate(broken)  # the schema check catches an unmarked inference on an emulated card
    assert "EMULATED" in C.table_rows(doc)[0][-1]


def test_refine_adds_points_between_a_knees_neighbours():
    new = probe_cli.refine([4096, 8192, 16384, 32768, 65536], [{"last_below": 16384, "first_above": 32768}])
    assert new and all(16384 / 2 ** 0.5 - 64 <= s <= 32768 * 2 ** 0.5 + 64 for s in new)
    assert 16384 not in new and 32768 not in new
    assert len([s for s in new if 16384 < s < 32768]) >= 6  # 8 a octave inside


def test_cpu_caches_reads_sysfs(tmp_path):
    for i, (lvl, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{lvl}\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert probe_cli.cpu_caches(tmp_path) == [{"level": 1, "type": "Data", "size_bytes": 32768},
                                              {"level": 2, "type": "Unified", "size_bytes": 1 << 20}]


def test_compare_two_cards(probed, tmp_path, capsys):
    out, _, _ = probed
    assert main(["compare", str(out), str(out / "card.json"), "--json"]) == exitcodes.OK
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["inference"] for r in rows} == {"levels", "read_granularity", "interleave"}
    assert all(r["verdict"] in ("same", "uncertain in both") for r in rows), rows
    other = json.loads((out / "card.json").read_text())
    gran = next(i for i in other["inferences"] if i["name"] == "read_granularity")
    # 4x what this host's probe found (a loaded host once measured 256 B: a fixed 256 was "same")
    gran.update(value=4 * (gran["value"] or 64), uncertain=False, confidence=0.9)
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert main(["compare", str(out), str(tmp_path / "b.json"), "--json"]) == exitcodes.OK
    rows = {r["inference"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    was = next(i for i in json.loads((out / "card.json").read_text())["inferences"] if i["name"] == "read_granularity")
    assert rows["read_granularity"]["verdict"] == ("uncertain in A" if was["uncertain"] else "differs")


def test_compare_card_with_a_csv_is_one_line(probed, capsys):
    out, _, _ = probed
    assert main(["compare", str(out), str(out / "probe.csv")]) == exitcodes.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a device card" in err[0]


def test_compare_cards_verdicts():
    base: dict = {"name": "levels", "unit": "bytes", "confidence": 1.0, "method": "m", "evidence": [], "uncertain": False,
            "reason": "", "emulated": False,
            "detail": {"levels": [{"latency_ns": 1.0}, {"latency_ns": 4.0}, {"latency_ns": 90.0}]}}
    a = {"inferences": [dict(base, value=[32768, 524288])]}
    assert C.compare_cards(a, {"inferences": [dict(base, value=[40000, 600000])]})[0]["verdict"] == "same"
    assert C.compare_cards(a, {"inferences": [dict(base, value=[32768, 2 << 20])]})[0]["verdict"] == "differs"
    assert C.compare_cards(a, {"inferences": [dict(base, value=[32768])]})[0]["verdict"] == "differs"
    assert C.compare_cards(a, {"inferences": [dict(base, value=None, uncertain=True)]})[0]["verdict"] == "uncertain in B"

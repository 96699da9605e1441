"""The op labels the one-liners and the figures print come from the op table (core/ops.def,
through libplcore.so's schema: params.OPS, READ_OPS, WRITE_OPS, DURABLE_WRITES), not from lists
of their own: loaded-latency's --op choices, idle-latency's rows, REPORT fig 8's bars and their
axis label. The text printed today is checked word for word, and an op added to the table
reaches each of them."""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys

import pmemlab.cli as cli
from pmemlab import params as P
from pmemlab.cli import oneliners
from pmemlab.plots import recipes


def _parser(name: str) -> argparse.ArgumentParser:
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = action.choices[name]
    return parser


def test_the_text_printed_today() -> None:
    op = next(a for a in _parser("loaded-latency")._actions if "--op" in a.option_strings)
    assert tuple(op.choices) == oneliners.PROBE_OPS == ("load", "ntload", "ntstore", "store+clwb")
    assert [oneliners.idle_label(op, pattern, cold) for op, pattern, cold, _ in oneliners.IDLE_ROWS] == [
        "load, random, cold line", "load, sequential, cold line", "store+clwb, warm line", "ntstore, warm line"]
    assert oneliners.IDLE_ROWS == (("load", "rand", 1, 0), ("load", "seq", 1, 0), ("store+clwb", "seq", 0, 1),
                                   ("ntstore", "seq", 0, 1))
    assert recipes.INSTR_ORDER == ("load", "ntload", "store+clflush", "ntstore", "store+clflushopt", "store+clwb")
    assert P.DURABLE_WRITES == ("ntstore", "store+clwb", "store+clflushopt", "store+clflush")
    # whether an op flushes is the table's flag (ops.def PL_OPF_FLUSHES), not read from its name
    assert {op["name"] for op in P.plcore.schema()["ops"] if op["flushes"]} == {
        "store+clwb", "store+clflushopt", "store+clflush"}
    # and whether it is non-temporal (PL_OPF_NT): the ops whose instructions are movnt*
    assert P.NON_TEMPORAL_OPS == {"ntload", "ntstore", "ntcopy"}


def test_the_non_temporal_flag_is_the_ops_instructions() -> None:
    """PL_OPF_NT is set on exactly the ops one of whose instructions, at some width, is a
    non-temporal move (movnti, movntdq, movntdqa, vmovntdq...), as the op table names them."""
    lib = P.plcore.lib()
    lib.pl_op_insn.restype = ctypes.c_char_p
    lib.pl_op_insn.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint32]
    for idx, op in enumerate(P.plcore.schema()["ops"]):
        insns = [lib.pl_op_insn(idx, width, 0xFFFFFFFF) or b"" for width in P.WIDTHS]
        # an op whose loop is its backend's own (chase: plain mov loads) has no generated forms
        assert op["non_temporal"] == any(b"movnt" in i for i in insns), (op, insns)


PROBE = """
import json
import pmemlab.plcore as plcore

schema = plcore.schema()
added = ({"name": "ntstore+clwb", "reads": False, "writes": True, "flushes": True, "non_temporal": True},
         {"name": "ntload2", "reads": True, "writes": False, "flushes": False, "non_temporal": True},
         {"name": "ntfake", "reads": True, "writes": False, "flushes": False, "non_temporal": False})
plcore.schema = lambda: {**schema, "ops": [*schema["ops"], *added]}
from pmemlab.cli import oneliners
from pmemlab.plots import recipes
print(json.dumps({"probe": oneliners.PROBE_OPS, "idle": oneliners.IDLE_ROWS, "instr": recipes.INSTR_ORDER,
                  "short": recipes.OP_SHORT}))
"""


def test_an_op_added_to_the_table_reaches_every_list() -> None:
    """Two more rows in the schema the controller reads (what a row of ops.def gives it): a
    non-temporal read and a durable write flushed with clwb."""
    res = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got["probe"] == ["load", "ntload", "ntstore", "store+clwb", "ntstore+clwb", "ntload2", "ntfake"]
    assert ["ntstore+clwb", "seq", 0, 1] in got["idle"] and not any(r[0] == "ntload2" for r in got["idle"])
    assert got["short"]["ntstore+clwb"] == "SNW" and got["short"]["ntload2"] == "LN"
    # non-temporal by its flag, not by its name: a plain read called nt... is an idle row of cold lines
    assert got["short"]["ntfake"] == "L" and ["ntfake", "rand", 1, 0] in got["idle"]
    assert "ntstore+clwb" in got["instr"] and "ntload2" in got["instr"]

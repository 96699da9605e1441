"""The kernel log from a mark on (kernel_log.KernelLog: the per-test check in conftest and the tests
that look for the module's reason in the log) reads /dev/kmsg in the test process: a record written
after the mark is seen, once, as dmesg prints it, and the bed's pattern of a bad line matches it in
that form."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import BAD_LOG
from kernel_log import KernelLog, new_kernel_log

pytestmark = pytest.mark.kernel_matrix


def test_records_written_after_the_mark_are_read_once() -> None:
    kmsg = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.lseek(kmsg, 0, os.SEEK_END)
        assert new_kernel_log(kmsg) == []
        tag = f"pmemlab-test: kmsg reader {os.getpid()}"
        with open("/dev/kmsg", "w") as log:
            log.write(tag + " one\n")
            log.flush()
            log.write(tag + " two\n")
        lines = new_kernel_log(kmsg)
        assert [ln.split("] ", 1)[1] for ln in lines if tag in ln] == [tag + " one", tag + " two"], lines
        assert all(re.match(r"\[\s*\d+\.\d{6}\] ", ln) for ln in lines), lines
        assert new_kernel_log(kmsg) == []
    finally:
        os.close(kmsg)


def test_a_mark_gives_what_came_after_it_and_keeps_it() -> None:
    tag = f"pmemlab-test: mark {os.getpid()}"
    Path("/dev/kmsg").write_text(tag + " before\n")
    with KernelLog() as log:
        assert not [ln for ln in log.lines() if tag in ln]
        Path("/dev/kmsg").write_text(tag + " after\n")
        assert [ln.split("] ", 1)[1] for ln in log.lines() if tag in ln] == [tag + " after"]
        # lines() keeps what it has read: a second call still has it, and what came since
        Path("/dev/kmsg").write_text(tag + " later\n")
        assert [ln.split("] ", 1)[1] for ln in log.lines() if tag in ln] == [tag + " after", tag + " later"]


def test_a_splat_line_in_that_form_is_caught() -> None:
    # the form new_kernel_log gives; not written to the log (the bed would fail the boot for it)
    assert BAD_LOG.search("[   12.345678] WARNING: CPU: 1 PID: 42 at kmod/run.c:10 pl_run+0x1/0x2 [pmemlab]")
    assert not BAD_LOG.search("[   12.345678] pmemlab: run done")

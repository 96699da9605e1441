"""The per-test kernel-log check (conftest.clean_kernel_log) reads /dev/kmsg in the test process:
a record written during a test is seen, once, as dmesg prints it, and the bed's pattern of a bad
line matches it in that form."""
from __future__ import annotations

import os
import re

import pytest

from conftest import BAD_LOG, new_kernel_log

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


def test_a_splat_line_in_that_form_is_caught() -> None:
    # the form new_kernel_log gives; not written to the log (the bed would fail the boot for it)
    assert BAD_LOG.search("[   12.345678] WARNING: CPU: 1 PID: 42 at kmod/run.c:10 pl_run+0x1/0x2 [pmemlab]")
    assert not BAD_LOG.search("[   12.345678] pmemlab: run done")

"""Per-thread context switches of a run's threads, from the kernel's taskstats interface.

When a task exits the kernel sends its accounting record (struct taskstats, linux/taskstats.h)
over generic netlink to every listener registered for the CPU it exited on. The record holds
the task's voluntary and involuntary context switches over its whole life (`nvcsw`, `nivcsw`:
the same counters as /proc/PID/task/TID/status). The run's threads exit when the run ends (the
module's `pmemlab/CPU` kthreads are stopped before the result is published; the runner's worker
threads are joined before it prints its result), so their records arrive when the run is over:
exact counts, nothing polled while the run is timed, no thread missed because it exited between
two reads of /proc.

Registering needs CAP_NET_ADMIN in the initial network namespace (root on the host or guest; not
in most containers). Without it, or on a kernel without CONFIG_TASKSTATS, `ExitListener.open`
returns None and the context-switch columns stay empty.
"""

from __future__ import annotations

import os
import select
import socket
import struct
from dataclasses import dataclass
from typing import Iterator

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_GENL_VERSION = 1
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_TYPE_PID = 1
TASKSTATS_TYPE_STATS = 3
TASKSTATS_TYPE_AGGR_PID = 4

# Offsets in struct taskstats (linux/taskstats.h; these fields have not moved since version 1 of
# the record: fields are only ever appended). tests/host/controller/host/test_conditions.py checks them against
# offsetof() in the installed header.
OFF_VERSION = 0
OFF_COMM = 80
COMM_LEN = 32
OFF_PID = 128
OFF_PPID = 132
OFF_NVCSW = 272
OFF_NIVCSW = 280
RECORD_MIN = OFF_NIVCSW + 8

NLMSGHDR = struct.Struct("=IHHII")
GENLMSGHDR = struct.Struct("=BBH")
NLATTR = struct.Struct("=HH")


@dataclass(frozen=True)
class TaskExit:
    """The record of one exited thread."""

    pid: int  # the thread's id (TID)
    ppid: int  # the parent process of its thread group
    comm: str
    voluntary: int
    involuntary: int


def _attr(kind: int, payload: bytes) -> bytes:
    size = NLATTR.size + len(payload)
    return NLATTR.pack(size, kind) + payload + b"\0" * (-size % 4)


def _attrs(buf: bytes) -> Iterator[tuple[int, bytes]]:
    off = 0
    while off + NLATTR.size <= len(buf):
        size, kind = NLATTR.unpack_from(buf, off)
        if size < NLATTR.size:
            return
        yield kind & 0x3FFF, buf[off + NLATTR.size: off + size]
        off += (size + 3) & ~3


def _message(kind: int, cmd: int, version: int, payload: bytes, seq: int, flags: int = NLM_F_REQUEST) -> bytes:
    body = GENLMSGHDR.pack(cmd, version, 0) + payload
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, flags, seq, 0) + body


def _messages(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(type, payload after the generic netlink header) of each netlink message in `data`."""
    off = 0
    while off + NLMSGHDR.size <= len(data):
        size, kind, _flags, _seq, _port = NLMSGHDR.unpack_from(data, off)
        if size < NLMSGHDR.size:
            return
        yield kind, data[off + NLMSGHDR.size: off + size]
        off += (size + 3) & ~3


def parse_record(stats: bytes) -> TaskExit | None:
    """A struct taskstats as sent by the kernel (None when too short to hold the counters)."""
    if len(stats) < RECORD_MIN:
        return None
    comm = stats[OFF_COMM: OFF_COMM + COMM_LEN].split(b"\0", 1)[0].decode("utf-8", "replace")
    pid, ppid = struct.unpack_from("=II", stats, OFF_PID)
    nvcsw, nivcsw = struct.unpack_from("=QQ", stats, OFF_NVCSW)
    return TaskExit(pid=pid, ppid=ppid, comm=comm, voluntary=nvcsw, involuntary=nivcsw)


def parse_exits(data: bytes, family: int) -> list[TaskExit]:
    """The per-thread records (TASKSTATS_TYPE_AGGR_PID) among the netlink messages in `data`."""
    out = []
    for kind, payload in _messages(data):
        if kind != family:
            continue
        for attr, value in _attrs(payload[GENLMSGHDR.size:]):
            if attr != TASKSTATS_TYPE_AGGR_PID:
                continue
            for inner, record in _attrs(value):
                if inner == TASKSTATS_TYPE_STATS:
                    parsed = parse_record(record)
                    if parsed is not None:
                        out.append(parsed)
    return out


class ExitListener:
    """A taskstats listener for every CPU: `drain()` discards what arrived so far (call it before a
    run), `collect()` returns the records that arrived since."""

    RCVBUF = 4 << 20  # other tasks exit too: room for a few thousand records between drains

    def __init__(self, sock: socket.socket, family: int) -> None:
        self.sock = sock
        self.family = family
        self.overflowed = False
        # one receive buffer for the listener's life: recv(1 MiB) allocates (and gives back) a
        # megabyte at every call, twice a point (issue 37)
        self._buf = memoryview(bytearray(1 << 20))

    @classmethod
    def open(cls, cpus: int | None = None) -> ExitListener | None:
        """A registered listener, or None where taskstats cannot be used here (no permission, no
        CONFIG_TASKSTATS, not the initial network namespace)."""
        try:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        except (OSError, AttributeError):
            return None
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, cls.RCVBUF)
            sock.bind((0, 0))
            family = cls._family(sock)
            if family is None:
                sock.close()
                return None
            count = cpus or os.cpu_count() or 1
            mask = f"0-{count - 1}\0".encode()
            sock.send(_message(family, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
                               _attr(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, mask), seq=2,
                               flags=NLM_F_REQUEST | NLM_F_ACK))
            if not cls._acked(sock):
                sock.close()
                return None
        except OSError:
            sock.close()
            return None
        return cls(sock, family)

    @staticmethod
    def _family(sock: socket.socket) -> int | None:
        sock.send(_message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, _attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"), seq=1))
        if not select.select([sock], [], [], 2.0)[0]:
            return None
        for kind, payload in _messages(sock.recv(65536)):
            if kind == NLMSG_ERROR:
                return None
            for attr, value in _attrs(payload[GENLMSGHDR.size:]):
                if attr == CTRL_ATTR_FAMILY_ID and len(value) >= 2:
                    return int(struct.unpack_from("=H", value)[0])
        return None

    @staticmethod
    def _acked(sock: socket.socket) -> bool:
        """The kernel's answer to the registration (asked for with NLM_F_ACK): an error message
        with code 0. Exit records that arrive first are skipped (drain() would drop them anyway)."""
        while select.select([sock], [], [], 2.0)[0]:
            for kind, payload in _messages(sock.recv(1 << 20)):
                if kind == NLMSG_ERROR:
                    return len(payload) >= 4 and struct.unpack_from("=i", payload)[0] == 0
        return False

    def _read(self, timeout_s: float, keep: bool = True) -> list[TaskExit]:
        """The records that arrived (waiting up to timeout_s for the first); with keep=False
        they are received and dropped unparsed."""
        out: list[TaskExit] = []
        wait = timeout_s
        while select.select([self.sock], [], [], wait)[0]:
            try:
                size = self.sock.recv_into(self._buf)
            except OSError:  # ENOBUFS: records were dropped while nobody read
                self.overflowed = True
                continue
            if keep:
                out += parse_exits(bytes(self._buf[:size]), self.family)
            wait = 0.0
        return out

    def drain(self) -> None:
        """Forget every record so far (the exits of other tasks between runs)."""
        self._read(0.0, keep=False)
        self.overflowed = False

    def collect(self, timeout_s: float = 0.0) -> list[TaskExit]:
        """The records since the last drain; waits up to timeout_s for the first one."""
        return self._read(timeout_s)

    def close(self) -> None:
        self.sock.close()

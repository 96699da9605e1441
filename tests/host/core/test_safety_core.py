"""The safety checks of core/ (the same objects the module and the runner use, through
libplcore.so):

- the signature probe names what the real tools write (mkfs.*, mkswap, sgdisk, sfdisk, parted,
  cryptsetup, make-bcache, mksquashfs, xorriso, mkfs.erofs) exactly as `blkid -p` does, on image
  files; formats those tools cannot write to a file (LVM2, md, ZFS) from their documented
  on-disk layout; nothing on zeros or random data; "unreadable" when it could not look; never a
  read outside the target;
- the bad-range overlap: both ends of a window and of a range, sector vs byte units, the offset
  of a partition on its disk, the lowest of several ranges, no overflow.
"""
from __future__ import annotations

import ctypes
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from testlib import TOP


MiB = 1 << 20
READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint)


class BadRange(ctypes.Structure):
    _fields_ = [("sector", ctypes.c_uint64), ("count", ctypes.c_uint64)]


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    lib = ctypes.CDLL(str(TOP / "userspace" / "runner" / "libplcore.so"))
    lib.pl_sig_probe.argtypes = [READ_FN, ctypes.c_void_p, ctypes.c_uint64]
    lib.pl_sig_probe.restype = ctypes.c_char_p
    u64 = ctypes.c_uint64
    lib.pl_bad_first.argtypes = [ctypes.POINTER(BadRange), ctypes.c_uint, u64, u64, u64,
                                 ctypes.POINTER(u64), ctypes.POINTER(u64)]
    return lib


class Probe:
    """pl_sig_probe over a file or bytes, recording every read."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.reads: list[tuple[int, int]] = []

    def run(self, size: int, read: Callable[[int, int], bytes | None]) -> str:
        def cb(_ctx, off, buf, length):
            self.reads.append((off, length))
            data = read(off, length)
            if data is None:
                return -5
            assert len(data) == length
            ctypes.memmove(buf, data, length)
            return 0

        fn = READ_FN(cb)
        return self.lib.pl_sig_probe(fn, None, size).decode()

    def file(self, path: Path) -> str:
        fd = os.open(path, os.O_RDONLY)
        try:
            return self.run(os.fstat(fd).st_size, lambda off, n: os.pread(fd, n, off))
        finally:
            os.close(fd)

    def data(self, buf: bytes | bytearray) -> str:
        return self.run(len(buf), lambda off, n: bytes(buf[off:off + n]))


def blkid_type(path: Path) -> str:
    """What blkid -p names first: the TYPE of a superblock, else the PTTYPE of a partition table."""
    res = subprocess.run(["blkid", "-p", "-o", "export", str(path)], capture_output=True, text=True)
    tags = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
    return tags.get("TYPE") or tags.get("PTTYPE") or "none"


def sh(cmd: str, **kw) -> None:
    subprocess.run(["sh", "-c", cmd], check=True, capture_output=True, **kw)


# (name, image size, how to make it: a shell command on $IMG, the tool it needs)
TOOLS: list[tuple[str, int, str, str]] = [
    ("ext2", 64 * MiB, "mkfs.ext2 -q -F $IMG", "mkfs.ext2"),
    ("ext3", 64 * MiB, "mkfs.ext3 -q -F $IMG", "mkfs.ext3"),
    ("ext4", 64 * MiB, "mkfs.ext4 -q -F $IMG", "mkfs.ext4"),
    ("xfs", 320 * MiB, "mkfs.xfs -q -f $IMG", "mkfs.xfs"),
    ("btrfs", 128 * MiB, "mkfs.btrfs -q -f $IMG", "mkfs.btrfs"),
    ("vfat-12", 4 * MiB, "mkfs.vfat -F 12 $IMG", "mkfs.vfat"),
    ("vfat-16", 64 * MiB, "mkfs.vfat -F 16 $IMG", "mkfs.vfat"),
    ("vfat-32", 64 * MiB, "mkfs.vfat -F 32 $IMG", "mkfs.vfat"),
    ("f2fs", 128 * MiB, "mkfs.f2fs -q -f $IMG", "mkfs.f2fs"),
    ("ntfs", 64 * MiB, "mkntfs -q -F -Q $IMG", "mkntfs"),
    ("exfat", 64 * MiB, "mkfs.exfat $IMG", "mkfs.exfat"),
    ("swap", 64 * MiB, "mkswap $IMG", "mkswap"),
    ("swap-64k", 64 * MiB, "mkswap -p 65536 $IMG", "mkswap"),
    ("gpt-sgdisk", 64 * MiB, "sgdisk -n 1:2048:+16M $IMG", "sgdisk"),
    ("gpt-empty", 64 * MiB, "sgdisk -o $IMG", "sgdisk"),
    ("gpt-parted", 64 * MiB, "parted -s $IMG mklabel gpt mkpart p1 1MiB 20MiB", "parted"),
    ("dos-sfdisk", 64 * MiB, "echo 2048,32768,83 | sfdisk -q $IMG", "sfdisk"),
    ("dos-parted", 64 * MiB, "parted -s $IMG mklabel msdos mkpart primary 1MiB 20MiB", "parted"),
    ("luks2", 64 * MiB, "printf pw | cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 "
                        "--pbkdf-force-iterations 1000 $IMG -", "cryptsetup"),
    ("luks1", 64 * MiB, "printf pw | cryptsetup luksFormat -q --type luks1 --pbkdf-force-iterations 1000 $IMG -",
     "cryptsetup"),
    ("bcache", 64 * MiB, "make-bcache -B $IMG", "make-bcache"),
    ("squashfs", 0, "mksquashfs $DIR $IMG -quiet -noappend", "mksquashfs"),
    ("iso9660", 0, "xorriso -outdev $IMG -map $DIR / ", "xorriso"),
    ("erofs", 0, "mkfs.erofs $IMG $DIR", "mkfs.erofs"),
]


@pytest.mark.parametrize("name,size,cmd,tool", TOOLS, ids=[t[0] for t in TOOLS])
def test_probe_names_what_the_tools_write_as_blkid_does(lib, tmp_path: Path, name: str, size: int,
                                                        cmd: str, tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} missing: scripts/install-deps installs it")
    img, src = tmp_path / "img", tmp_path / "tree"
    src.mkdir()
    (src / "file").write_text("pmemlab\n")
    if size:
        with open(img, "wb") as fh:
            fh.truncate(size)
    sh(cmd, env={**os.environ, "IMG": str(img), "DIR": str(src)})
    if not size:  # an image built from a tree: pad it so the end-of-device probes have room
        with open(img, "r+b") as fh:
            fh.truncate(max(img.stat().st_size, 8 * MiB))
    want = blkid_type(img)
    assert want != "none", f"blkid found nothing after: {cmd}"
    assert Probe(lib).file(img) == want


def put(buf: bytearray, off: int, data: bytes) -> None:
    buf[off:off + len(data)] = data


LAYOUTS: dict[str, Callable[[int], bytearray]] = {}


def layout(name: str):
    def deco(fn):
        LAYOUTS[name] = fn
        return fn
    return deco


@layout("LVM2_member")
def _lvm(size: int) -> bytearray:
    b = bytearray(size)
    put(b, 0x200, b"LABELONE")  # pvcreate's label in sector 1
    put(b, 0x218, b"LVM2 001")
    return b


@layout("linux_raid_member")
def _md12(size: int) -> bytearray:
    b = bytearray(size)  # metadata 1.2 (mdadm's default): at 4 KiB
    put(b, 0x1000, struct.pack("<II", 0xa92b4efc, 1))
    return b


@layout("linux_raid_member-1.1")
def _md11(size: int) -> bytearray:
    b = bytearray(size)
    put(b, 0, struct.pack("<II", 0xa92b4efc, 1))
    return b


@layout("linux_raid_member-1.0")
def _md10(size: int) -> bytearray:
    b = bytearray(size)  # 8 KiB before the 4 KiB-aligned end
    put(b, (size & ~0xfff) - 0x2000, struct.pack("<II", 0xa92b4efc, 1))
    return b


@layout("linux_raid_member-0.90")
def _md090(size: int) -> bytearray:
    b = bytearray(size)  # the last 64 KiB-aligned 64 KiB block, big-endian host
    put(b, (size & ~0xffff) - 0x10000, struct.pack(">I", 0xa92b4efc))
    return b


@layout("zfs_member")
def _zfs(size: int) -> bytearray:
    b = bytearray(size)  # an uberblock in slot 5 of label 1's ring
    put(b, 256 * 1024 + 128 * 1024 + 5 * 1024, struct.pack("<Q", 0x00bab10c))
    return b


@layout("zfs_member-end")
def _zfs_end(size: int) -> bytearray:
    b = bytearray(size)  # label 3 (the last 256 KiB), big-endian pool
    put(b, (size & ~(256 * 1024 - 1)) - 256 * 1024 + 128 * 1024 + 127 * 1024, struct.pack(">Q", 0x00bab10c))
    return b


@layout("PMBR")
def _pmbr(size: int) -> bytearray:
    b = bytearray(size)  # a protective MBR whose GPT header is gone
    put(b, 0x1be + 4, b"\xee")
    put(b, 0x1fe, b"\x55\xaa")
    return b


@layout("gpt-4k")
def _gpt4k(size: int) -> bytearray:
    b = bytearray(size)  # 4 KiB logical blocks: the header at LBA 1 = 4096
    put(b, 4096, b"EFI PART")
    return b


@layout("gpt-backup")
def _gpt_backup(size: int) -> bytearray:
    b = bytearray(size)  # only the backup header in the last LBA survives
    put(b, size - 512, b"EFI PART")
    return b


@layout("swsuspend")
def _swsuspend(size: int) -> bytearray:
    b = bytearray(size)
    put(b, 4096 - 10, b"S1SUSPEND")
    return b


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_probe_finds_documented_layouts(lib, name: str) -> None:
    size = 96 * MiB + 12345 * 512  # not aligned: the end probes must round down
    assert Probe(lib).data(LAYOUTS[name](size)) == name.split("-")[0]


def test_probe_finds_nothing_on_zeros_and_random_data(lib) -> None:
    assert Probe(lib).data(bytearray(96 * MiB)) == "none"
    rng = random.Random(14)
    for _ in range(300):
        buf = bytearray(rng.randbytes(1 * MiB))
        assert Probe(lib).data(buf) == "none"


def test_probe_reads_only_inside_the_target(lib) -> None:
    for size in (0, 1, 511, 512, 513, 4095, 4096, 65535, 65536 + 71, 64 * MiB, 64 * MiB + 1, 96 * MiB + 512):
        p = Probe(lib)
        assert p.data(bytearray(size)) == "none"
        assert all(0 <= off and off + n <= size for off, n in p.reads), (size, p.reads)


def test_probe_says_unreadable_only_when_it_found_nothing(lib, tmp_path: Path) -> None:
    # every read fails: nothing could be looked at
    assert Probe(lib).run(64 * MiB, lambda off, n: None) == "unreadable"
    # the end of the target fails, the rest is zero: still unreadable (a signature may hide there)
    size = 64 * MiB
    zeros = lambda off, n: None if off >= size - 256 * 1024 else bytes(n)  # noqa: E731
    assert Probe(lib).run(size, zeros) == "unreadable"
    # a file system found before the unreadable part: named
    img = tmp_path / "img"
    with open(img, "wb") as fh:
        fh.truncate(size)
    sh(f"mkfs.ext4 -q -F {img}")
    data = img.read_bytes()
    assert Probe(lib).run(size, lambda off, n: None if off >= 0x8000 else data[off:off + n]) == "ext4"


# ---- bad ranges ----
def first(lib, ranges: list[tuple[int, int]], origin: int, start: int, length: int) -> tuple[int, int] | None:
    arr = (BadRange * max(len(ranges), 1))(*[BadRange(s, c) for s, c in ranges])
    off, nbytes = ctypes.c_uint64(), ctypes.c_uint64()
    hit = lib.pl_bad_first(arr, len(ranges), origin, start, length, ctypes.byref(off), ctypes.byref(nbytes))
    assert hit in (0, 1)
    return (off.value, nbytes.value) if hit else None


def test_bad_range_edges_in_sectors_and_bytes(lib) -> None:
    r = [(8, 2)]  # bytes 4096 .. 5119 of the disk
    assert first(lib, r, 0, 0, 4096) is None            # ends where the range begins
    assert first(lib, r, 0, 0, 4097) == (4096, 1024)    # one byte into it
    assert first(lib, r, 0, 5119, 1) == (4096, 1024)    # its last byte
    assert first(lib, r, 0, 5120, 4096) is None         # starts where it ends
    assert first(lib, r, 0, 4607, 2) == (4096, 1024)    # across its two sectors
    assert first(lib, r, 0, 4096, 0) is None            # an empty window overlaps nothing
    assert first(lib, [(8, 0)], 0, 0, 1 << 30) is None  # an empty range is no range
    assert first(lib, [], 0, 0, 1 << 30) is None


def test_bad_range_offset_of_the_target_on_its_disk(lib) -> None:
    # a partition starting at disk byte 1 MiB: disk sector 2048 is its byte 0
    origin = 1 * MiB
    assert first(lib, [(2048, 1)], origin, 0, 512) == (0, 512)
    assert first(lib, [(2047, 1)], origin, 0, 1 << 30) is None        # just before the target
    assert first(lib, [(2040, 16)], origin, 0, 1) == (0, 4096)        # begins before it: clipped
    assert first(lib, [(4096, 8)], origin, 1 * MiB, 4096) == (1 * MiB, 4096)
    assert first(lib, [(4096, 8)], origin, 0, 1 * MiB) is None        # window ends at the range


def test_bad_range_lowest_of_several_and_no_overflow(lib) -> None:
    ranges = [(900, 4), (100, 1), (500, 8)]
    assert first(lib, ranges, 0, 0, 1 << 40) == (100 * 512, 512)
    assert first(lib, ranges, 0, 200 * 512, 1 << 40) == (500 * 512, 4096)
    top = (1 << 64) - 1
    assert first(lib, [(top >> 9, 1)], 0, top - 4096, 4096) == ((top >> 9) * 512, 512)
    assert first(lib, [(0, (1 << 63))], 0, 5, 1) == (0, (1 << 64) - 1)  # length saturates
    assert first(lib, [(1 << 60, 1)], 0, 0, 1 << 62) is None            # sector beyond 2^64 bytes

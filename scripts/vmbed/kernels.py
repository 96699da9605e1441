"""The kernel a guest boots: the matrix's (scripts/kernels.list, on the host or in a build root),
Debian's default, or a kernel build tree; and which of them can run the CXL lanes."""
from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from .common import TOP, die


def default_kernel() -> str:
    """The kernel Debian's linux-image-amd64 metapackage points at, else the newest installed."""
    try:
        dep = subprocess.run(
            ["dpkg-query", "-W", "-f=${Depends}", "linux-image-amd64"],
            capture_output=True, text=True, check=True,
        ).stdout
        m = re.search(r"linux-image-(\S+)", dep)
        if m and Path(f"/boot/vmlinuz-{m.group(1)}").exists():
            return m.group(1)
    except (OSError, subprocess.CalledProcessError):
        pass
    kernels = sorted(p.name[len("vmlinuz-"):] for p in Path("/boot").glob("vmlinuz-*"))
    if not kernels:
        die("no kernel under /boot: run scripts/install-deps")
    return kernels[-1]


@functools.cache
def kernel_list():
    """scripts/kernels (the matrix's kernels, scripts/kernels.list, and where each one is) as a
    module: the one place that knows them."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("pmemlab_kernels", str(TOP / "scripts" / "kernels"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def guest_kernels() -> list[str]:
    """The releases of the matrix's kernels that are installed (on the host or in a build root),
    in the order of scripts/kernels.list: the first runs every guest test."""
    return [k.release for k in kernel_list().load() if k.release]


class Kernel:
    """The kernel a guest boots: an installed Debian one (/boot/vmlinuz-RELEASE, headers under
    /lib/modules/RELEASE/build), or a kernel build tree (DIR/arch/x86/boot/bzImage, the module
    built with KDIR=DIR) such as scripts/debug-kernel's."""

    def __init__(self, release: str, image: Path, kdir: Path) -> None:
        self.release, self.image, self.kdir = release, image, kdir

    @classmethod
    def installed(cls, release: str) -> "Kernel":
        """On the host (/boot, /lib/modules), else in the build root of the matrix's kernel
        (scripts/build-root: the image, its modules, which virtme-ng finds beside it, and the
        headers the module is built against inside that root)."""
        found = kernel_list().locate(release)
        if found is not None:
            image, kdir, _root = found
            return cls(release, image, kdir)
        return cls(release, Path(f"/boot/vmlinuz-{release}"), Path(f"/lib/modules/{release}/build"))

    @classmethod
    def from_tree(cls, tree: Path) -> "Kernel":
        tree = tree.resolve()
        image = tree / "arch" / "x86" / "boot" / "bzImage"
        if not image.is_file():
            raise ValueError(f"{tree} holds no built kernel ({image} missing)")
        try:
            release = (tree / "include" / "config" / "kernel.release").read_text().strip()
        except OSError:
            release = ""
        if not release or not (tree / "Makefile").is_file():
            raise ValueError(f"{tree} is not a configured kernel build tree "
                             "(include/config/kernel.release or Makefile missing)")
        return cls(release, image, tree)


def select_kernel(release: str | None, tree: str | None, env: dict[str, str] | None = None) -> Kernel:
    """--kernel RELEASE or --kernel-tree DIR (not both); an option given on the command line
    overrides both VM_KERNEL and VM_KERNEL_TREE; neither: Debian's default kernel."""
    if release and tree:
        die("give --kernel or --kernel-tree, not both")
    if release is None and tree is None:
        env = os.environ if env is None else env
        release, tree = env.get("VM_KERNEL", ""), env.get("VM_KERNEL_TREE", "")
        if release and tree:
            die("VM_KERNEL and VM_KERNEL_TREE are both set; give one")
    if tree:
        try:
            return Kernel.from_tree(Path(tree))
        except ValueError as exc:
            die(str(exc))
    kernel = Kernel.installed(release or default_kernel())
    if not kernel.image.exists():
        die(f"kernel {kernel.release} is not installed ({kernel.image} missing)")
    return kernel


# The kernel options each CXL lane needs: the pmem lane (a region, an nvdimm bridge, fsdax) and
# the ram lane (a dax device of the region, kmem to online it).
CXL_PMEM_CONFIG = ("CXL_ACPI", "CXL_PCI", "CXL_MEM", "CXL_PMEM", "CXL_REGION", "FS_DAX")
CXL_RAM_CONFIG = ("DEV_DAX_CXL", "DEV_DAX_KMEM")


def kernel_config(kernel: Kernel) -> dict[str, str]:
    for path in (Path(f"/boot/config-{kernel.release}"), kernel.kdir / ".config"):
        try:
            text = path.read_text()
        except OSError:
            continue
        return dict(m.groups() for m in re.finditer(r"^CONFIG_(\w+)=(\S+)$", text, re.M))
    return {}


def cxl_kernel_lacks(kernel: Kernel, ram: bool = True) -> str:
    """'' when the kernel has every option the CXL lanes need, else the missing ones."""
    config = kernel_config(kernel)
    want = CXL_PMEM_CONFIG + (CXL_RAM_CONFIG if ram else ())
    missing = [f"CONFIG_{o}" for o in want if config.get(o) not in ("y", "m")]
    return " ".join(missing)


def cxl_kernels() -> list[str]:
    """The installed guest kernels that run both CXL lanes."""
    return [k for k in guest_kernels() if not cxl_kernel_lacks(Kernel.installed(k))]

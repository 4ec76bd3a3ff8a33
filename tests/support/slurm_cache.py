"""Where the bake rehearsal keeps its Slurm build (a compile of an hour on two busy cores), so a
checkout, a branch and a CI run on this machine all find the same one.

The cache holds what `build.sh slurm` writes that is Slurm's own: its programs, libraries,
plugins, headers and units, /etc/slurm, its spool and log directories, the download and the
build's stamp. The virtual cluster lays the same files over its nodes' /usr (current()). Its key
is what the compile reads: build.sh's Slurm section, the pinned source, and the compiler's and
libraries' versions in the root it was built in; never the root's name, which changes whenever
any image package list does (a new package for sshd or Prometheus must not recompile Slurm).
What belongs to the root, not to Slurm (the account files useradd rewrote, the linker's cache),
is left out: over another root it would hide that root's own accounts. `build.sh slurm` makes
Slurm's users again when it finds the build done."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from slurmstack.plan import images

# What a Slurm build in a root reads besides its source: the compiler, the C library's headers
# and the development packages the image installs for it (image_pins.json, slurm_build).
COMPILE_INPUTS = ("gcc", "libc6-dev", *images.image_pins()["packages"]["slurm_build"])
# The root's, not Slurm's: left out of the cached layer (see the module's text).
NOT_SLURMS = (
    "etc/passwd",
    "etc/passwd-",
    "etc/group",
    "etc/group-",
    "etc/shadow",
    "etc/shadow-",
    "etc/gshadow",
    "etc/gshadow-",
    "etc/.pwd.lock",
    "etc/ld.so.cache",
    "var/cache/ldconfig",
    "tmp",
)
# A layer no run has used for this long goes when another is made (each is ~160 MB).
UNUSED_SECONDS = 24 * 3600


def compile_inputs(root: Path) -> str:
    """``package=version`` of every compile input installed in ``root``, one a line."""
    out = subprocess.run(
        ["chroot", str(root), "dpkg-query", "-W", "-f=${Package}=${Version}\\n", *COMPILE_INPUTS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # dpkg-query exits 1 when a package is missing; the missing one is then not in the key,
    # and the build itself fails on it.
    return "".join(sorted(out.stdout.splitlines(keepends=True)))


def slurm_section(build_script: Path) -> str:
    script = build_script.read_text()
    return script[
        script.index("# --- Slurm, built") : script.index("# --- end of the Slurm section")
    ]


def layer_path(cache: Path, version: str, sha256: str, build_script: Path, root: Path) -> Path:
    key = f"{slurm_section(build_script)}\n{sha256}\n{compile_inputs(root)}"
    return cache / f"rehearsal-slurm-{version}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _current_link(cache: Path, version: str) -> Path:
    return cache / f"rehearsal-slurm-{version}-current"


def _point_at(layer: Path, version: str) -> None:
    """The image tests' layer of ``version`` becomes the one current() names (a new link
    renamed over the old: a reader never finds none)."""
    link = _current_link(layer.parent, version)
    fresh = link.with_name(link.name + f".{os.getpid()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(layer.name)
    fresh.rename(link)


def is_built(layer: Path, version: str) -> bool:
    if (layer / "usr/sbin/slurmd").exists():
        os.utime(layer)  # in use: see store()
        _point_at(layer, version)
        return True
    return False


STAMP = "var/lib/slurmstack/image/slurm"


def current(cache: Path, version: str, sha256: str) -> Path | None:
    """The layer the image tests last built or used for ``version``, if it is a build of that
    version from the pinned source (build.sh's stamp: version, sha256, configure flags)."""
    layer = _current_link(cache, version).resolve()
    stamp = layer / STAMP
    if not (layer / "usr/sbin/slurmd").is_file() or not stamp.is_file():
        return None
    if stamp.read_text().split()[:2] != [version, sha256]:
        return None
    return layer


def store(upper: Path, layer: Path, version: str) -> None:
    """Keeps Slurm's part of an overlay's upper layer as ``layer`` (atomically: a partial copy
    is never taken for a build), and drops other recipes' layers unused for a day (another
    checkout may have one in use right now as an overlay's lower layer)."""
    partial = layer.with_name(layer.name + ".build")
    shutil.rmtree(partial, ignore_errors=True)
    # cp -a: owners, modes and any overlay whiteouts (character devices) as they are.
    subprocess.run(["cp", "-a", str(upper), str(partial)], check=True, timeout=600)
    for name in NOT_SLURMS:
        path = partial / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    now = time.time()
    for old in layer.parent.glob("rehearsal-slurm-*"):
        if old.is_symlink() or old in (layer, partial):
            continue
        if now - old.stat().st_mtime > UNUSED_SECONDS:
            shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(layer, ignore_errors=True)
    partial.rename(layer)
    _point_at(layer, version)

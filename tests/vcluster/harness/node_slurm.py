"""Stand-in "slurm-version": which Slurm a virtual cluster's nodes run, chosen per cluster.

- ``image``: the image's own build (the bake rehearsal's `build.sh slurm`, tests/image, cached
  under /var/cache/slurmstack), laid over each node's /usr: daemons, clients, plugins and units
  of the pinned source the rehearsal can compile here (the older leg, 24.11.5: the version of
  record's tarball is listed in Debian's signed index but this workplace's mirror does not
  serve it, docs/slurm-versions.md).
- ``record``: Debian's build of the version of record (26.05.5), from the root `.ci/slurm-chroot
  forky` makes (SLURMSTACK_SLURM_ROOT), its /usr laid over each node's. Its binaries need that
  root's C library, which the same layer brings (the host's programs run on it too: glibc keeps
  old symbols). Debian builds it without PMIx, so the cluster's slurm.conf says
  MpiDefault=none (MPI scenarios take ``image``); the root has Debian's sackd (login nodes).
- ``host``: this machine's Slurm (Debian 12's 22.05), for a local run with neither.

SLURMSTACK_VCLUSTER_SLURM picks the clusters' (CI: record); a scenario that needs a release
asks for its own (the topology scenarios need 25.05 or later, MPI needs PMIx).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slurmstack import slurm_releases
from support import slurm_cache

if TYPE_CHECKING:
    from .cluster import VirtualCluster

IMAGE_SLURM_CACHE = Path("/var/cache/slurmstack")
SLURM_MODE_ENV = "SLURMSTACK_VCLUSTER_SLURM"
SLURM_ROOT_ENV = "SLURMSTACK_SLURM_ROOT"
# What the image rehearsal compiles here (the older leg), and so what the image mode runs.
IMAGE_BUILT_VERSION = "24.11.5"
# "image-contract": contract items a node lacks when it runs Debian's Slurm, not the image's.
WITHOUT_SACKD = frozenset({"cmd:sackd"})


@dataclass(frozen=True)
class NodeSlurm:
    mode: str
    version: str  # what the cluster's files are written for (the definition's slurm.version)
    usr_layer: Path | None  # laid over each node's /usr; None: the host's Slurm
    absent: frozenset[str] = frozenset()  # contract items this Slurm lacks
    slurm_conf: Mapping[str, str] = field(default_factory=dict)  # keys set in the store's copy
    pmix: bool = True  # Slurm's mpi/pmix is there (`srun --mpi=pmix`, the rendered MPI job)

    def layers(self) -> dict[str, tuple[Path, ...]]:
        """Node directory -> read-only layers over the host's (top first)."""
        return {"/usr": (self.usr_layer,)} if self.usr_layer is not None else {}

    def problem(self) -> str | None:
        """What this machine lacks to run it, if anything."""
        if self.mode == "image" and self.usr_layer is None:
            return (
                f"the image's build of Slurm {self.version} (made by `pytest -m image "
                "tests/image`, cached under /var/cache/slurmstack)"
            )
        if self.mode == "record" and self.usr_layer is None:
            return (
                f"Debian's Slurm {self.version} in a root ({SLURM_ROOT_ENV}, made by "
                "`.ci/slurm-chroot forky`)"
            )
        return None


def image() -> NodeSlurm:
    pin = slurm_releases.source(IMAGE_BUILT_VERSION)
    assert pin is not None
    layer = slurm_cache.current(IMAGE_SLURM_CACHE, IMAGE_BUILT_VERSION, pin.sha256)
    return NodeSlurm("image", IMAGE_BUILT_VERSION, layer / "usr" if layer else None)


def record() -> NodeSlurm:
    root = Path(os.environ.get(SLURM_ROOT_ENV, "/nonexistent"))
    usr = root / "usr"
    version = slurm_releases.version_of_record()
    has_pmix = any((usr / "lib/x86_64-linux-gnu/slurm-wlm").glob("mpi_pmix*.so"))
    return NodeSlurm(
        "record",
        version,
        usr if (usr / "sbin/slurmd").is_file() else None,
        absent=frozenset() if (usr / "sbin/sackd").exists() else WITHOUT_SACKD,
        slurm_conf={} if has_pmix else {"MpiDefault": "none"},
        pmix=has_pmix,
    )


def host() -> NodeSlurm:
    # Written for the image's release; the host's older Slurm reads what it knows of it (see
    # standins.HOST_SLURM_STORE_PATCHES).
    return NodeSlurm("host", IMAGE_BUILT_VERSION, None, absent=WITHOUT_SACKD)


MODES: dict[str, Callable[[], NodeSlurm]] = {"image": image, "record": record, "": host}


def from_env() -> NodeSlurm:
    """The shared cluster's: SLURMSTACK_VCLUSTER_SLURM (image, record, or unset: the host's)."""
    mode = os.environ.get(SLURM_MODE_ENV, "")
    if mode not in MODES:
        raise ValueError(f"{SLURM_MODE_ENV}={mode!r}: expected one of image, record, or unset")
    return MODES[mode]()


def in_root(root: Path, path: str, hops: int = 8) -> Path:
    """``path`` inside ``root``, its symbolic links followed inside ``root`` too (Debian's
    /usr/sbin/slurmd is an alternatives link: /etc/alternatives/slurmd, then slurmd-wlm)."""
    for _ in range(hops):
        inside = root / path.lstrip("/")
        if not inside.is_symlink():
            return inside
        target = os.readlink(inside)
        path = target if target.startswith("/") else str(Path(path).parent / target)
    raise ValueError(f"{path}: more than {hops} symbolic links in {root}")


def assert_nodes_run(cluster: VirtualCluster) -> None:
    """slurmd -V on every node, slurmctld -V on the head and the version slurmctld records for
    each registered slurmd are the release the cluster's files are written for, and the daemons
    are the layer's own files (same bytes), not the host's Slurm."""
    slurm = cluster.slurm
    assert cluster.head is not None and slurm.usr_layer is not None
    root = slurm.usr_layer.parent
    layer_slurmd = hashlib.sha256(in_root(root, "/usr/sbin/slurmd").read_bytes()).hexdigest()
    for node in [cluster.head, *cluster.workers.values()]:
        assert node.run("slurmd", "-V").stdout.split()[-1] == slurm.version, node.label()
        real = node.run("readlink", "-f", "/usr/sbin/slurmd").stdout.strip()
        digest = node.run("sha256sum", real).stdout.split()[0]
        assert digest == layer_slurmd, node.label()
    assert cluster.head.run("slurmctld", "-V").stdout.split()[-1] == slurm.version
    records = cluster.node_records()
    for node in cluster.workers.values():  # registered (an elastic node powered down is not)
        assert records[cluster.slurm_name(node)]["Version"] == slurm.version, node.label()

"""Stand-in "slurm-version": with SLURMSTACK_VCLUSTER_SLURM=image, the image's Slurm build (the
bake rehearsal's, tests/image) is laid over each node's /usr, so the nodes run the Slurm the
image's own build step made of the pinned source (its daemons, clients, plugins and units)
rather than this machine's."""

from __future__ import annotations

from pathlib import Path

from slurmstack import slurm_releases
from support import slurm_cache

from .standins import SLURM_VERSION_WRITTEN_FOR, runs_image_slurm

IMAGE_SLURM_CACHE = Path("/var/cache/slurmstack")


def image_slurm_layer() -> Path | None:
    """The rehearsal's current build of the release the harness writes for, if there is one."""
    pin = slurm_releases.source(SLURM_VERSION_WRITTEN_FOR)
    assert pin is not None
    return slurm_cache.current(IMAGE_SLURM_CACHE, SLURM_VERSION_WRITTEN_FOR, pin.sha256)


def image_layers() -> dict[str, tuple[Path, ...]]:
    """Node directory -> read-only layers of the image over the host's (top first)."""
    if not runs_image_slurm():
        return {}
    layer = image_slurm_layer()
    return {"/usr": (layer / "usr",)} if layer is not None else {}

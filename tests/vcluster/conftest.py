"""The virtual cluster fixture: tests/vcluster/definitions/two-pools.yaml booted once per session
(harness/), shared by every scenario. A scenario leaves the cluster as healthy as it found it
(every pool at full size, every node registered), so scenarios run in any order.

Needs root (network namespaces, mounts) and Debian's Slurm, munge, Open MPI, iproute2 and
nftables (each node loads its metadata firewall). With SLURMSTACK_VCLUSTER_SLURM=image the nodes
run the image's Slurm build instead (the bake rehearsal's, which tests/image makes and caches),
with =record Debian's build of the version of record (harness/node_slurm.py).
With CI=true anything missing fails the suite; elsewhere the scenarios are skipped. Set
VCLUSTER_KEEP=1 to keep the run's directory (every node's layers and logs) after the session.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from vcluster.harness import VirtualCluster, node_slurm
from vcluster.harness.node_slurm import NodeSlurm, from_env

DEFINITION = Path(__file__).resolve().parent / "definitions" / "two-pools.yaml"
_PMIX_CLUSTERS = itertools.count(1)
BINARIES = ("ip", "nsenter", "unshare", "mount", "nft", "munged", "slurmctld", "slurmd", "srun",
            "scontrol", "sbatch", "mpirun")  # fmt: skip
DEBIAN_PACKAGES = (
    "slurmctld slurmd slurm-client munge libpmix-dev openmpi-bin python3-mpi4py iproute2 nftables"
)


def missing_requirements(slurm: NodeSlurm) -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("root (network namespaces and mounts)")
    problems += [b for b in BINARIES if shutil.which(b) is None]
    if not Path("/usr/bin/python3").exists():
        problems.append("/usr/bin/python3")
    elif subprocess.run(
        ["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True
    ).returncode:
        problems.append("python3-mpi4py for /usr/bin/python3")
    if (problem := slurm.problem()) is not None:
        problems.append(problem)
    return problems


def require_host(slurm: NodeSlurm | None = None) -> None:
    """Skips (fails with CI=true) when this machine cannot run a cluster whose nodes run
    ``slurm`` (the shared cluster's, from SLURMSTACK_VCLUSTER_SLURM, by default)."""
    problems = missing_requirements(slurm or from_env())
    if not problems:
        return
    message = f"the virtual cluster needs {', '.join(problems)} (apt: {DEBIAN_PACKAGES})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {message}")
    pytest.skip(message)


def two_pools(slurm: NodeSlurm | None = None, name: str | None = None) -> Iterator[VirtualCluster]:
    """definitions/two-pools.yaml booted, its nodes running ``slurm`` (the shared cluster's by
    default), closed and checked for leftovers after. ``name``: the cluster's, for one that
    lives beside the shared cluster (one moto holds both: their resources' names must differ)."""
    require_host(slurm)
    began = time.monotonic()
    keep = os.environ.get("VCLUSTER_KEEP") == "1"
    definition = DEFINITION
    if name is not None:
        data = yaml.safe_load(DEFINITION.read_text()) | {"name": name}
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as renamed:
            yaml.safe_dump(data, renamed)
        definition = Path(renamed.name)
    try:
        cluster_cm = VirtualCluster(definition, keep=keep, slurm=slurm)
    finally:
        if name is not None:
            definition.unlink()
    with cluster_cm as cluster:
        yield cluster
        cluster.timings["session"] = time.monotonic() - began
        print(f"\nvirtual cluster ({cluster.slurm.mode}) timings (s): {cluster.timings}")
    assert cluster.leftovers() == [], "the virtual cluster's cleanup left these behind"


@pytest.fixture(scope="session")
def shared_vcluster() -> Iterator[VirtualCluster]:
    yield from two_pools()


@pytest.fixture(scope="session")
def vcluster(shared_vcluster: VirtualCluster) -> VirtualCluster:
    """The session's cluster (a module that needs another overrides this name)."""
    return shared_vcluster


@pytest.fixture(scope="module")
def pmix_vcluster(request: pytest.FixtureRequest) -> Iterator[VirtualCluster]:
    """A two-pools cluster whose Slurm has PMIx (MPI jobs, `srun --mpi=pmix`): the shared one
    when its Slurm has it; otherwise (Debian's build of the version of record has none) one
    of the module's own, on the image's build, which has."""
    if from_env().pmix:
        yield request.getfixturevalue("shared_vcluster")
    else:
        # A name per cluster: moto keeps a closed cluster's resources (its secrets) too.
        yield from two_pools(node_slurm.image(), name=f"vcpmix{next(_PMIX_CLUSTERS)}")

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

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcluster.harness import VirtualCluster
from vcluster.harness.node_slurm import NodeSlurm, from_env

DEFINITION = Path(__file__).resolve().parent / "definitions" / "two-pools.yaml"
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


@pytest.fixture(scope="session")
def vcluster() -> Iterator[VirtualCluster]:
    require_host()
    began = time.monotonic()
    with VirtualCluster(DEFINITION, keep=os.environ.get("VCLUSTER_KEEP") == "1") as cluster:
        yield cluster
        cluster.timings["session"] = time.monotonic() - began
        print(f"\nvirtual cluster timings (s): {cluster.timings}")
    assert cluster.leftovers() == [], "the virtual cluster's cleanup left these behind"

"""A multi-node MPI job across namespaces: `srun --mpi=pmix` starts one rank per node of the
GPU pool with Debian's Open MPI and mpi4py; each rank sums its own slice of a range, an
all-reduce adds the slices up, and every rank checks the total. PMIx wires the ranks up through
the slurmds, Open MPI's TCP transport carries the all-reduce over the bridge."""

from __future__ import annotations

import json

import pytest

from vcluster.harness import VirtualCluster

pytestmark = pytest.mark.vcluster


@pytest.fixture(scope="module")
def vcluster(pmix_vcluster: VirtualCluster) -> VirtualCluster:
    """MPI jobs go through PMIx: a cluster whose Slurm has it (conftest.pmix_vcluster)."""
    return pmix_vcluster


N = 1_000_003
RANK_PROGRAM = f"""
import json, socket
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
part = sum(range(rank, {N}, size))
total = comm.allreduce(part, op=MPI.SUM)
hosts = comm.gather(socket.gethostname(), root=0)
assert total == {N} * ({N} - 1) // 2, total
if rank == 0:
    print(json.dumps({{"size": size, "total": total, "hosts": hosts}}))
"""


def test_allreduce_across_namespaces(vcluster: VirtualCluster) -> None:
    assert vcluster.head is not None
    gpu_nodes = vcluster.pool_nodes("gpu")
    out = vcluster.head.run(
        "srun", "--mpi=pmix", "-p", "gpu", f"-N{len(gpu_nodes)}", "--ntasks-per-node=1",
        "-t", "2", "--chdir=/tmp",
        # The ranks run Debian's python3 (mpi4py is a Debian package, not in the venv).
        "/usr/bin/python3", "-c", RANK_PROGRAM,
        timeout=120,
    ).stdout  # fmt: skip
    result = json.loads(out.strip().splitlines()[-1])
    assert result["size"] == len(gpu_nodes) == 2
    assert result["total"] == N * (N - 1) // 2
    assert sorted(result["hosts"]) == sorted(vcluster.slurm_name(n) for n in gpu_nodes)

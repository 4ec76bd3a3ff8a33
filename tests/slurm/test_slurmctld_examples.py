"""Every example's rendered slurm.conf, gres.conf and cgroup.conf, run by Debian's slurmctld.

The partitions, node sets, default partition and managed settings are read back from the
running controller (`scontrol show partition`, `scontrol show config`), and each pool's
GRES as slurmd resolves it from the rendered gres.conf for a node name of that pool
(`slurmd -G`). Slurm tested: the distribution's 22.05.8 (see test_version).
"""

from __future__ import annotations

import pwd
import re
import subprocess
from pathlib import Path

import pytest

from slurm.conftest import make_devices, run, write_config
from slurm.slurm_root import slurm_root
from slurmstack.contract import node_name, node_name_prefix
from slurmstack.render import head_files, pool_files
from support.examples import EXAMPLE_IDS, example_plan

pytestmark = pytest.mark.slurm


def partitions(text: str) -> dict[str, dict[str, str]]:
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        out[fields["PartitionName"]] = fields
    return out


def show_config(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if " = " in line:
            key, value = line.split(" = ", 1)
            out[key.strip()] = value.strip()
    return out


def ps_user(pid: int) -> str:
    """The user a process runs as (its effective uid)."""
    uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[1])
    return pwd.getpwuid(uid).pw_name


def test_version(cluster) -> None:
    """The Slurm under test: the host's, or the one in SLURMSTACK_SLURM_ROOT (whose
    commands must not fall back to the host's)."""
    result = run(["slurmctld", "-V"], cluster)
    assert re.match(r"slurm(-wlm)? \d+\.\d+\.\d+", result.stdout), result.stdout
    assert run(["slurmd", "-V"], cluster).stdout == result.stdout
    host = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, check=False)
    if slurm_root() is not None:
        assert host.stdout != result.stdout, "the root's slurmctld is the host's version"


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_slurmctld_runs_rendered_config(cluster, example: str) -> None:
    plan = example_plan(example)
    first = plan.pools[0]
    write_config(
        cluster, head_files(plan), pool_files(plan, first)["/etc/slurmstack/task-prolog.sh"]
    )
    cluster.start_munged()
    cluster.start_slurmctld()

    parts = partitions(cluster.scontrol("show", "partition", "-o", "--all").stdout)
    elastic = {p.elastic_partition: p for p in plan.elastic_pools}
    assert set(parts) == {p.partition for p in plan.pools} | set(elastic)
    for name, pool in elastic.items():
        # Hidden and inactive: it only gives the pool's elastic nodes their idle time.
        assert parts[name]["State"] == "INACTIVE" and parts[name]["Hidden"] == "YES"
        assert parts[name]["SuspendTime"] == str(pool.suspend_time_seconds)
        assert parts[name]["Nodes"] == pool.elastic_node_names
    for pool in plan.pools:
        part = parts[pool.partition]
        assert part["NodeSets"] == pool.nodeset
        assert part["Default"] == ("YES" if pool.partition == plan.default_partition else "NO")
        assert part["OverSubscribe"] == ("EXCLUSIVE" if pool.exclusive else "NO")
        assert part["State"] == "UP"
        assert part["DefMemPerCPU"] == str(pool.def_mem_per_cpu_mib)

    config = show_config(cluster.scontrol("show", "config").stdout)
    assert config["ClusterName"] == plan.name
    # As in production: slurmctld runs as the slurm user, not root.
    slurm = pwd.getpwnam("slurm")
    assert config["SlurmUser"] == f"slurm({slurm.pw_uid})"
    assert ps_user(cluster.procs[-1].pid) == "slurm"
    assert config["SlurmctldParameters"] == "enable_configless"
    assert config["SelectType"] == "select/cons_tres"
    assert config["SelectTypeParameters"] == "CR_CORE_MEMORY"
    assert config["GresTypes"] == ",".join(plan.gres_types)
    assert config["MpiDefault"] == "pmix"
    assert config["ReturnToService"] == "2"
    assert config["TreeWidth"] == "65533"
    assert config["PropagateResourceLimitsExcept"] == "MEMLOCK"
    assert config["MaxNodeCount"] == str(plan.slurm_max_node_count)
    assert config["SlurmdTimeout"] == "300 sec"
    assert config["SrunPortRange"] == "60001-63000"
    for key, value in plan.slurm_settings:
        assert config[key] == value, key
    if plan.elastic_pools:
        assert config["ResumeProgram"] == "/usr/local/bin/slurmstack-resume"
        assert config["SuspendProgram"] == "/usr/local/bin/slurmstack-suspend"
        assert config["ResumeFailProgram"] == "/usr/local/bin/slurmstack-resume-fail"
        assert config["ResumeTimeout"] == "1800 sec"
        assert config["SuspendTimeout"] == "120 sec"


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_gres_per_pool(cluster, example: str) -> None:
    """slurmd resolves the rendered gres.conf for a node of each pool: accelerator pools get
    exactly their devices (gpu:h100:8, gpu:l40s:4, neuron:trainium2:16, ...), others none."""
    plan = example_plan(example)
    write_config(cluster, head_files(plan), "#!/bin/sh\n")
    # From Slurm 23.11 on, `slurmd -G` authenticates through munge before it prints.
    cluster.start_munged()
    for pool in plan.pools:
        if pool.gpu is not None:
            make_devices(cluster, "nvidia" if pool.gpu.kind == "gpu" else "neuron", pool.gpu.count)
    for pool in plan.pools:
        name = node_name(node_name_prefix(pool.name), "10.42.3.7")
        (cluster.root / "spool" / name).mkdir()
        result = run(
            [
                "slurmd",
                "-f",
                str(cluster.conf),
                "-N",
                name,
                "-Z",
                "--conf",
                pool.dynamic_node_conf,
                "-G",
            ],
            cluster,
        )
        # slurmd -G reports on stderr or in its log file, depending on the Slurm version.
        log_file = cluster.root / "log" / f"slurmd-{name}.log"
        log = result.stderr + (log_file.read_text() if log_file.exists() else "")
        assert "more configured than expected" not in log, log
        found = re.findall(r"Gres Name=(\w+) Type=(\w+) Count=(\d+)", log)
        if pool.gpu is None:
            assert found == [], log
        else:
            assert found == [(pool.gpu.gres_name, pool.gpu.gres_type, str(pool.gpu.count))]
            assert pool.gpu.gres_type == pool.gpu.gres_type.lower()

"""Every stand-in of the virtual cluster, in one place, each with the reason it is one.

Everything a node runs is the real thing (the rendered cloud-init document's write_files and
runcmd, the metadata firewall loaded with nft in the node's own network namespace, the bootstrap
runner and the node agent installed from the config store, munged, slurmctld and slurmd with the
rendered configuration and unit commands) except what is listed here: hardware and kernel
features this machine lacks, systemd, and what an image or AWS provides.
``STAND_INS`` is the list the README and the closing notes quote; the constants below it are what
the harness code uses, each next to the entry that explains it.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slurmstack.contract import NCCL_TESTS_DIR

if TYPE_CHECKING:  # tools/docs.py loads this file on its own, outside the package
    from .node_slurm import NodeSlurm

NODE_SIDE = Path(__file__).resolve().parent / "node_side"
STEP = str(NODE_SIDE / "steps.py")


@dataclass(frozen=True)
class StandIn:
    name: str
    replaces: str  # what a real node has
    why: str  # why it cannot be real here
    instead: str  # what the virtual cluster does


STAND_INS: tuple[StandIn, ...] = (
    StandIn(
        "instances",
        "EC2 instances of the head node and the pools' Auto Scaling groups",
        "no AWS here",
        "moto (server mode) holds the instances; each is a network namespace with its own "
        "mount, UTS and PID namespaces, so a node's processes, hostname and files are its own",
    ),
    StandIn(
        "node-root",
        "the node's root disk",
        "nodes share this machine's file system",
        "overlays on /etc, /var, /usr/local, /dev and /sys/class and a fresh /run per node: "
        "everything a node writes lands in its own layer, nothing reaches the host",
    ),
    StandIn(
        "image-contract",
        "the baked image's enroot, pyxis plugin, mdadm, EFS and Lustre mount helpers, which the "
        "boot's `slurmstack-bootstrap check` step requires",
        "this machine has Debian's Slurm, munge, nftables and python3, but none of these",
        "the check runs for real on everything else in the node's contract; the items in "
        "ABSENT_FROM_THIS_MACHINE are left out of its list",
    ),
    StandIn(
        "image-boto3",
        "python3-boto3 of the node image (Ubuntu 24.04: 1.34, which honours AWS_ENDPOINT_URL)",
        "Debian 12's python3 has no boto3 (its python3-boto3 predates AWS_ENDPOINT_URL)",
        "the project's locked boto3 and its dependencies are linked into the node's "
        "/usr/local python path",
    ),
    StandIn(
        "metadata",
        "the instance metadata service",
        "there is no EC2 here",
        "an IMDSv2 server at 169.254.169.254 in the fabric namespace answers each node by its "
        "source address: instance id, address, type, zone, user data, role credentials; "
        "it can be slower than EC2's, so nodes give botocore's metadata calls 5 s and 3 tries; "
        "the instance identity document; EC2's notices a scenario sets (spot/instance-action, "
        "autoscaling/target-lifecycle-state). "
        "Each node's own rendered nftables rule set (loaded for real by its firewall unit) "
        "lets only root's calls reach it",
    ),
    StandIn(
        "systemd",
        "systemd (systemctl, units, drop-ins, timers)",
        "a namespace has no init system; this machine's systemd must not run cluster daemons",
        "a systemctl that reads the same unit files (rendered and packaged) and runs their "
        "ExecStartPre/ExecStart as the unit says (User, EnvironmentFile, Type, RuntimeDirectory, "
        "StateDirectory, RequiresMountsFor, Requires and the RequiredBy links enabling makes, triggering "
        "conditions); the node's fresh /run gets the packages' tmpfiles.d directories at its "
        "start (MariaDB's /run/mysqld); timers are enabled but never fire: a scenario runs the "
        "service",
    ),
    StandIn(
        "hostnamectl",
        "hostnamectl (systemd-hostnamed)",
        "no systemd-hostnamed in a namespace",
        "sets the hostname of the node's own UTS namespace",
    ),
    StandIn(
        "gpus",
        "NVIDIA GPUs (/dev/nvidia0..N-1)",
        "no GPUs here",
        "character devices (major 195) made in the node's /dev, as many as the pool expects, "
        "so GRES binding and the health check see what a real node has",
    ),
    StandIn(
        "efa",
        "EFA devices (/sys/class/infiniband/*)",
        "no EFA hardware here",
        "directories in the node's /sys/class/infiniband, as many as the pool expects, each "
        "with its port's state file reading ACTIVE (a scenario may write another) and the "
        "driver's port counters (hw_counters/, EFA_COUNTERS) at zero, which a scenario may "
        "advance as the driver counts traffic; traffic goes over the bridge",
    ),
    StandIn(
        "gpu-tools",
        "nvidia-smi and DCGM's dcgmi",
        "no GPUs, no NVIDIA driver here",
        "nvidia-smi and dcgmi scripts (node_side/) that answer the health check's queries from "
        "the node's GPU device files; a scenario injects faults through the node's "
        "/var/lib/vcluster/gpus.json (a GPU lost, ECC errors, a hang, a failed diagnostic)",
    ),
    StandIn(
        "dcgm-exporter",
        "dcgm-exporter (built from its pinned commit on NVIDIA images), reading DCGM",
        "no GPUs, no DCGM here",
        "node_side/dcgm_exporter.py at the image's path, run by the rendered unit with its "
        "flags: DCGM's fields per stand-in GPU device, with the exporter's labels and hpc_job "
        "from --hpc-job-mapping-dir (the rendered Prolog's files); a GPU the node's gpus.json "
        "says is lost is not served; utilisation and memory are what a scenario writes there "
        "(0 otherwise)",
    ),
    StandIn(
        "metrics-timer",
        "slurmstack-metrics.timer (the agent's node-metrics, and head-metrics on the head, "
        "every scrape interval)",
        "the stand-in systemctl's timers never fire",
        "the observability scenarios run slurmstack-metrics.service on every live node every "
        "scrape interval from a thread of the test (harness/observe.py)",
    ),
    StandIn(
        "kernel-log",
        "the kernel's log (/dev/kmsg), where the NVIDIA driver logs XIDs",
        "the host's kernel log is not a node's, and a test must not write to it",
        "each node's /dev/kmsg is a regular file in /dev/kmsg's record format, empty at boot; "
        "a scenario appends the records a driver would log",
    ),
    StandIn(
        "reboot",
        "RebootProgram=/usr/sbin/reboot (Ubuntu's systemd reboot)",
        "a namespace cannot reboot, and this machine's reboot would talk to its own systemd",
        "RebootProgram in the stored slurm.conf is node_side/reboot.py: it records the request "
        "in the node's /var/log/vcluster/reboot.log, clears the node's GPU faults and starts "
        "slurmd again with -b (it reports a fresh boot, as Slurm's own tests do) "
        "without the variables slurmd set for its own re-execution; the boot's steps are not "
        "run again",
    ),
    StandIn(
        "health-check-env",
        "HealthCheckProgram=/usr/local/sbin/slurmstack-health-check",
        "slurmd runs it with SLURMD_NODENAME alone in its environment, and nodes here reach "
        "moto through AWS_ENDPOINT_URL, which a real node does not need",
        "HealthCheckProgram in the stored slurm.conf is node_side/health_check.py: it sets the "
        "node's AWS_ENDPOINT_URL (and metadata timeouts) and runs the rendered program",
    ),
    StandIn(
        "requeue-delay",
        "Slurm's wait before a requeued batch job starts again (the credential lifetime, 120 s)",
        "a scenario would wait two minutes for a requeued job",
        "AuthInfo=cred_expire=10 in the stored slurm.conf",
    ),
    StandIn(
        "nvme-raid",
        "`slurmstack-node scratch`: RAID0 over the instance-store NVMe disks",
        "no instance-store disks (and no mdadm arrays) here",
        "the boot's step binds a per-node directory at the pool's scratch path; the agent's "
        "own step before every slurmd start (ExecStartPre) runs for real and finds it mounted",
    ),
    StandIn(
        "shared-storage",
        "`slurmstack-node mounts`: FSx for Lustre and EFS",
        "no Lustre client kernel module, no NFS server",
        "one directory per file system, shared by every node, bind-mounted at its path",
    ),
    StandIn(
        "existing-file-systems",
        "`slurmstack-node mounts` for a file system of yours (storage.existing, "
        "storage.home.file_system_id): FSx for Lustre or OpenZFS by the DNS and mount names the "
        "stack looked up and published, EFS by its id",
        "no FSx or EFS here, and no Lustre or NFS client mounts",
        "a directory shared by every node, named by the source the node resolves with the "
        "agent's own code from the published parameters (existing/<type>/<source>, e.g. "
        "fs-....fsx.us-east-1.amazonaws.com@tcp:/<mount name>), bind-mounted at its path: a "
        "node that read the wrong names mounts an empty directory. The offline engine's "
        "lookups (slurmstack.offline.existing) are the account; the VPC and subnet the "
        "definition names are made in moto",
    ),
    StandIn(
        "mountpoint-s3",
        "Mountpoint for Amazon S3 (`mount-s3`, baked into the image), which the agent's "
        "s3-mounts step runs as root",
        "AWS ships it as a download, not in Debian; building it needs a newer Rust than here",
        "a `mount-s3` (node_side/mount_s3.py) that mounts with Debian's s3fs (FUSE) against "
        "moto's S3, taking the role's credentials from the metadata service as root, as "
        "Mountpoint does; the agent's step runs for real (fstab, cache directory, the command "
        "line it builds). --read-only is a read-only mount (files 0444-like), --dir-mode a "
        "mask, --cache s3fs's cache; s3fs always allows overwrite and delete on a writable "
        "mount and has no cache size, and its throughput says nothing of Mountpoint's",
    ),
    StandIn(
        "fsx-associations",
        "FSx for Lustre's data repository associations: a batch import of the prefix's "
        "metadata when one is created, automatic import of new objects and automatic export "
        "of new files, each only where its policy lists the event",
        "no FSx here, and moto has no data repository associations",
        "the harness reads the associations the program registered (file system path, "
        "bucket and prefix, import and export events) and copies objects from moto's S3 into "
        "the shared Lustre directory at each association's path when the cluster is "
        "deployed, and both ways on `sync_associations` (harness/associations.py). It "
        "proves where the definition's associations put data on the nodes, not FSx's timing",
    ),
    StandIn(
        "state-volume",
        "`slurmstack-node state-volume`: the head node's EBS state volume, or with a backup "
        "controller the EFS file system both controllers mount there",
        "no EBS disk to find or format, no EFS",
        "one directory per cluster bind-mounted at the state mount (it outlives a head node, as "
        "the volume does; both controllers mount the same one, as they would the EFS); the "
        "state directory is made and owned as the agent does",
    ),
    StandIn(
        "controller-timeout",
        "slurm.conf's SlurmctldTimeout of a cluster with a backup controller (60 s)",
        "a takeover after 60 s of silence would make each scenario minutes longer",
        "10 s (standins.BACKUP_SLURMCTLD_TIMEOUT); Slurm's own takeover, handback and heartbeat "
        "run as rendered",
    ),
    StandIn(
        "external-database",
        "the MySQL-compatible server of slurm.accounting.database.type external (RDS, Aurora "
        "or one of your own), and the Secrets Manager secret of its password",
        "no AWS here, and the owner runs that server, not the stack",
        "Debian's MariaDB server in a namespace of its own on the fabric at the definition's "
        "host address (harness/database.py), slurmdbd's user made in it and the password put "
        "in moto's Secrets Manager under the definition's secret name; no TLS",
    ),
    StandIn(
        "cgroups",
        "ProctrackType=proctrack/cgroup, TaskPlugin=task/cgroup,task/affinity",
        "this machine gives no delegated cgroup tree",
        "the head's slurm.conf in the config store uses proctrack/linuxproc and task/none",
    ),
    StandIn(
        "node-size",
        "the instance type's CPUs and memory, which each node declares with slurmd --conf",
        "this machine has 2 cores",
        "SlurmdParameters=config_overrides in the stored slurm.conf: declared values are kept",
    ),
    StandIn(
        "slurmd-timeout",
        "SlurmdTimeout=300",
        "a dead node would take five minutes to be marked DOWN",
        "SlurmdTimeout=6 in the stored slurm.conf",
    ),
    StandIn(
        "ssm-agent",
        "the SSM agent running the apply-config document on the head node and the sync-nodes "
        "document on every node",
        "moto records commands but runs none",
        "the harness runs each document's runCommand lines (read back from moto) in the nodes "
        "its association targets: apply-config in the head node, sync-nodes in every worker and "
        "login node",
    ),
    StandIn(
        "asg-health",
        "the Auto Scaling group replacing a dead or Unhealthy instance",
        "moto does not watch instances, and marks an instance Unhealthy without replacing it",
        "the harness terminates a killed node's instance through the group "
        "(TerminateInstanceInAutoScalingGroup, capacity kept) and moto launches the "
        "replacement; `settle_groups` does what a group does with an instance marked Unhealthy "
        "(unless its ReplaceUnhealthy process is suspended): terminates it, through the "
        "termination lifecycle hook when the group has one, and boots the replacement",
    ),
    StandIn(
        "asg-lifecycle",
        "an Auto Scaling group's termination lifecycle hook (Terminating:Wait, "
        "RecordLifecycleActionHeartbeat, CompleteLifecycleAction)",
        "moto stores lifecycle hooks but never waits in them, and implements neither call",
        "the group's terminating instance is put in Terminating:Wait in moto's own records "
        "(and its metadata's autoscaling/target-lifecycle-state says Terminated); moto's "
        "Auto Scaling API gets the two calls (harness/groups.py), which check the hook, "
        "record heartbeats and completions; `settle_groups` terminates an instance once its "
        "action is completed. The launch (join) hook is kept too and never waited in: a "
        "node's `joined` step finds its instance InService and only waits for its node to be "
        "registered",
    ),
    StandIn(
        "elastic-instances",
        "the instances an elastic pool's EC2 Fleet launches, and their termination",
        "moto records them but runs nothing",
        "the harness boots the instances moto launched with the elastic tag as nodes, like the "
        "groups' (their user data is the pool's launch template's), and kills the node of an "
        "instance moto terminated (harness/elastic.py)",
    ),
    StandIn(
        "fleet-faults",
        "EC2 running out of capacity (InsufficientInstanceCapacity) for a fleet",
        "moto has no capacity to run out of",
        "a switch in front of moto answers the next CreateFleet calls with EC2's error "
        "response and no instances; it also keeps every CreateFleet request, which moto does "
        "not (harness/fleet_faults.py)",
    ),
    StandIn(
        "instance-topology",
        "EC2's DescribeInstanceTopology (each instance's network nodes)",
        "moto does not implement it",
        "a switch in front of moto answers it in EC2's shape, paged, for the running instances "
        "of the types EC2 covers: each gets the first leaf of the scenario's layout with room, "
        "and keeps it while it lives; on demand it throttles every call "
        "(RequestLimitExceeded) and it keeps each call's instance ids "
        "(harness/instance_topology.py)",
    ),
    StandIn(
        "power-env",
        "the EC2 endpoint the head's power programs reach (the Region's own)",
        "slurmctld runs ResumeProgram and SuspendProgram with no environment, so the "
        "endpoint override every other command gets cannot reach them",
        "the harness writes the node's AWS environment (AWS_ENDPOINT_URL, the metadata "
        "timeouts) into the head's /etc/slurmstack/power.env, which the programs read",
    ),
    StandIn(
        "vpc-dns",
        "the VPC's resolver, which answers a name it does not know (a powered-down elastic "
        "node's, which slurmctld may look up to message it) at once",
        "a namespace here has no resolver: glibc waits out its timeouts (10 s a lookup), "
        "Debian's 22.05 retries (its retry-getaddrinfo patch), and slurmctld 24.11 stalls on "
        "the lookups it makes for its clients until they time out",
        "every node resolves host names from /etc/hosts only (its nsswitch.conf's hosts: "
        "files): an unknown name is unknown at once",
    ),
    StandIn(
        "power-timeouts",
        "an elastic cluster's SuspendTimeout=120, ResumeTimeout=1800, a requeued job's wait "
        "of CredExpire + 1 s (120 s by default: job_mgr.c), the launch retry (120 s, "
        "doubling to 1800) and the sweep's grace for an instance no node runs on (600 s) in "
        "the head's node.json",
        "a scenario would wait minutes for each",
        "SuspendTimeout=5, ResumeTimeout=120, AuthInfo=cred_expire=10 in the stored slurm.conf; "
        "a launch retry of 5 s, doubling to 20, and a grace of 30 s in the head's stored "
        "node.json",
    ),
    StandIn(
        "cloud-node-visibility",
        "Slurm 23.11 showing powered-down CLOUD nodes in scontrol and sinfo",
        "Slurm 22.05 (this machine's) hides them unless PrivateData=cloud (23.02 dropped it)",
        "PrivateData=cloud in an elastic cluster's stored slurm.conf",
    ),
    StandIn(
        "slurmd-boot-time",
        "an elastic instance that has just booted",
        "a node here is a namespace on a host that booted long ago, and slurmctld refuses a "
        "resumed node whose boot time is older than the resume request",
        "slurmd -b (report the start as the boot time) in the stored elastic slurmd drop-in",
    ),
    StandIn(
        "slurm-version",
        "the definition's slurm.version (26.05.5), built in the image the nodes boot",
        "the bake rehearsal (tests/image) builds 24.11.5, the older pinned leg: this "
        "workplace's Debian mirror does not serve 26.05.5's source; and the nodes' root is this "
        "machine's (Debian 12, the rehearsal's own base), not the whole baked root",
        "each cluster picks its nodes' Slurm (node_slurm.py) and writes slurm.version for it: "
        "Debian's build of 26.05.5, the version of record, from the root .ci/slurm-chroot forky "
        "makes, its /usr laid over each node's, as CI runs the clusters "
        "(SLURMSTACK_VCLUSTER_SLURM=record); or the image's build of 24.11.5 (the rehearsal's "
        "Slurm step: daemons, clients, plugins, units, PMIx) laid the same way, which the MPI "
        "and workload scenarios (PMIx: Debian's 26.05 has none) and the upgrade scenario's "
        "start take (SLURMSTACK_VCLUSTER_SLURM=image runs every cluster on "
        "it); without either (a machine with neither) this machine's 22.05, which reads the "
        "file written for 24.11.5",
    ),
    StandIn(
        "sackd",
        "sackd on login nodes (Slurm's clients configless: the configuration slurmctld serves, in "
        "/run/slurm/conf, fetched again on every reconfigure)",
        "Debian 12's Slurm 22.05 has no sackd (Slurm 23.11 brought it); with the version of "
        "record or the image's Slurm (SLURMSTACK_VCLUSTER_SLURM=record or image) the login "
        "nodes run the real sackd instead",
        "the login node's sackd unit runs node_side/sackd.py instead (same unit, same user, same "
        "/run/slurm/conf): it copies the head's Slurm files from the config store every 5 s; "
        "22.05's clients read /run/slurm/conf as 26.05's do",
    ),
    StandIn(
        "amis",
        "the node images (the AMIs Image Builder bakes, or a pinned AMI)",
        "no images here: every node runs this machine's system",
        "moto's instances and launch templates carry a placeholder image id",
    ),
    StandIn(
        "efa-installer-mpi",
        "the EFA installer's Open MPI (/opt/amazon/openmpi) that CPU images carry, with which "
        "the MPI job compiles and runs",
        "no EFA installer here (it installs Ubuntu and Amazon Linux packages)",
        "nodes have no /opt/amazon/openmpi: the job's mpi-allreduce.sh puts that directory "
        "first on PATH only where it exists, so Debian's Open MPI (openmpi-bin, "
        "libopenmpi-dev) compiles and runs it",
    ),
    StandIn(
        "workload-tools",
        "libfabric's fi_info and nccl-tests' all_reduce_perf on a GPU node (the node check's "
        "nvidia-smi is gpu-tools')",
        "no GPUs, no EFA and no CUDA here",
        "one program (node_side/workload_tools.py) answering as each from the node's stand-in "
        "EFA entries and its Slurm job; its all_reduce_perf prints a sweep in nccl-tests' "
        "format, slowed when the run holds a node named in VCLUSTER_SLOW_NODES. The workload "
        "scenarios link it into the workers for their run and remove it after",
    ),
)

BY_NAME = {s.name: s for s in STAND_INS}

# --- what the harness code uses ---------------------------------------------------------

# "cgroups", "node-size", "slurmd-timeout", "reboot", "health-check-env", "requeue-delay": keys of
# the head node's
# slurm.conf changed in the copy the config store holds; each override must be a key the
# rendered file sets.
SLURM_CONF_PATH = "/etc/slurm/slurm.conf"
SLURM_CONF_OVERRIDES = {
    "ProctrackType": "proctrack/linuxproc",
    "TaskPlugin": "task/none",
    "SlurmdTimeout": "6",
    "RebootProgram": "/usr/local/sbin/vcluster-reboot",  # "reboot"
    "HealthCheckProgram": "/usr/local/sbin/vcluster-health-check",  # "health-check-env"
}
SLURM_CONF_ADDITIONS = (
    "SlurmdParameters=config_overrides",
    "AuthInfo=cred_expire=10",  # "requeue-delay"
)


def store_patches(slurm: NodeSlurm) -> dict[str, Callable[[str], str]]:
    """What the config store's copy of each file gets on a cluster whose nodes run ``slurm``."""
    patches = dict(STORE_PATCHES)
    if slurm.slurm_conf:
        patches[SLURM_CONF_PATH] = lambda text: replace_keys(
            STORE_PATCHES[SLURM_CONF_PATH](text), slurm.slurm_conf
        )
    if slurm.mode == "host":
        patches.update(HOST_SLURM_STORE_PATCHES)
    return patches


# "vpc-dns": where glibc is told how to resolve host names, and every node's answer.
NSSWITCH = "/etc/nsswitch.conf"


def hosts_from_files(nsswitch: str) -> str:
    lines = [
        "hosts: files" if line.startswith("hosts:") else line for line in nsswitch.splitlines()
    ]
    return "\n".join(lines) + "\n"


# "amis": any well-formed id will do, moto does not look images up.
PLACEHOLDER_AMI = "ami-0123456789abcdef0"

# "image-boto3": the modules botocore needs, linked from this environment.
NODE_PYTHON_MODULES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")

# "systemd", "hostnamectl": executables put first on the node's PATH
# (/usr/local/sbin).
NODE_TOOLS = {
    "/usr/local/sbin/systemctl": NODE_SIDE / "systemctl.py",
    "/usr/local/sbin/hostnamectl": NODE_SIDE / "hostnamectl.py",
    "/usr/local/bin/nvidia-smi": NODE_SIDE / "nvidia_smi.py",  # "gpu-tools"
    "/usr/local/bin/dcgmi": NODE_SIDE / "dcgmi.py",
    "/usr/local/bin/dcgm-exporter": NODE_SIDE / "dcgm_exporter.py",  # "dcgm-exporter"
    "/usr/local/sbin/vcluster-reboot": NODE_SIDE / "reboot.py",  # "reboot"
    "/usr/local/sbin/vcluster-health-check": NODE_SIDE / "health_check.py",  # "health-check-env"
    "/usr/local/sbin/vcluster-sackd": NODE_SIDE / "sackd.py",  # "sackd"
    "/usr/local/bin/mount-s3": NODE_SIDE / "mount_s3.py",  # "mountpoint-s3"
}
# "health-check-env": the environment the HealthCheckProgram's stand-in sets.
HEALTH_CHECK_ENV = "/etc/vcluster/aws.env"
# "gpu-tools": where a scenario writes a node's GPU faults (node_side/nvidia_smi.py).
GPU_FAULTS = "/var/lib/vcluster/gpus.json"
# "kernel-log": the node's own kernel log, a regular file in /dev/kmsg's record format.
KERNEL_LOG = "/dev/kmsg"
# "efa": a port's state, as the kernel's file reads for an active port, and the port counters
# the EFA driver keeps in hw_counters/ (Linux drivers/infiniband/hw/efa/efa_verbs.c, its port
# statistics: bytes and packets, RDMA reads and writes, drops, retransmits, remote trouble).
EFA_PORT_ACTIVE = "4: ACTIVE\n"
EFA_COUNTERS = ("tx_bytes", "tx_pkts", "rx_bytes", "rx_pkts", "rx_drops", "rdma_read_bytes",
                "rdma_write_bytes", "rdma_read_wr_err", "rdma_write_wr_err", "retrans_bytes",
                "retrans_pkts", "retrans_timeout_events", "unresponsive_remote_events",
                "impaired_remote_conn_events")  # fmt: skip

# "image-contract": contract items this machine lacks, dropped from the boot's check step.
CONTRACT_STEP = ("slurmstack-bootstrap", "check")
ABSENT_FROM_THIS_MACHINE = frozenset(
    {
        "cmd:enroot",
        "file:/usr/local/lib/slurm/spank_pyxis.so",
        "cmd:mdadm",
        "cmd:mount.efs",
        "cmd:mount.lustre",
        "cmd:lctl",
    }
)

# "nvme-raid", "shared-storage", "state-volume": commands the bootstrap runner runs
# (`slurmstack-bootstrap run slurmstack-node <step>`) replaced by steps.py; the runner is real.
REPLACED_STEPS = {
    ("slurmstack-node", "scratch"): "scratch",
    ("slurmstack-node", "mounts"): "mounts",
    ("slurmstack-node", "state-volume"): "state-volume",
}


def existing_source_directory(shared: Path, fstype: str, source: str) -> Path:
    """ "existing-file-systems": the directory serving the file system a node mounts as
    ``source`` (node_side/steps.py names it the same way)."""
    return shared / "existing" / fstype / urllib.parse.quote(source, safe="@:")


# "workload-tools": where each tool is linked in a worker (the image's paths of the real ones
# are /usr/bin and the EFA installer's; /usr/local/bin comes first on PATH), and the program.
WORKLOAD_TOOL = NODE_SIDE / "workload_tools.py"
WORKLOAD_TOOL_PATHS = (
    "/usr/local/bin/fi_info",
    f"{NCCL_TESTS_DIR}/all_reduce_perf",
)

# "gpus": the character-device major of /dev/nvidia<n> (NVIDIA's driver).
NVIDIA_MAJOR = 195


def patch_slurm_conf(text: str) -> str:
    """The rendered slurm.conf as this machine runs it: SLURM_CONF_OVERRIDES replace their
    keys' lines, SLURM_CONF_ADDITIONS follow at the end."""
    seen: set[str] = set()
    lines = []
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z]+)=", line)
        if match and match.group(1) in SLURM_CONF_OVERRIDES:
            key = match.group(1)
            lines.append(f"{key}={SLURM_CONF_OVERRIDES[key]}")
            seen.add(key)
        else:
            lines.append(line)
    missing = set(SLURM_CONF_OVERRIDES) - seen
    if missing:
        raise ValueError(f"the rendered slurm.conf no longer sets {sorted(missing)}")
    lines += ["", "# virtual cluster (tests/vcluster/harness/standins.py)", *SLURM_CONF_ADDITIONS]
    return "\n".join(lines) + "\n"


# "power-timeouts", "cloud-node-visibility": an elastic cluster's slurm.conf (one that sets
# ResumeProgram) gets these too; keys are replaced where the rendered file sets them.
ELASTIC_MARKER = "ResumeProgram="
ELASTIC_OVERRIDES = {"SuspendTimeout": "5", "ResumeTimeout": "120"}
ELASTIC_ADDITIONS = ("AuthInfo=cred_expire=10", "PrivateData=cloud")
LAUNCH_RETRY = {"first_seconds": 5, "max_seconds": 20}
ORPHAN_GRACE_SECONDS = 30


def replace_keys(text: str, values: Mapping[str, str]) -> str:
    """slurm.conf with each line of a key in ``values`` set to its value (other lines kept)."""
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={values[key]}" if key in values else line)
    return "\n".join(lines) + "\n"


def patch_elastic_slurm_conf(text: str) -> str:
    if not any(line.startswith(ELASTIC_MARKER) for line in text.splitlines()):
        return text
    return replace_keys(text, ELASTIC_OVERRIDES) + "".join(f"{a}\n" for a in ELASTIC_ADDITIONS)


def patch_node_config(text: str) -> str:
    """ "power-timeouts": the head's launch retry, when it has elastic pools."""
    data = json.loads(text)
    if not data.get("elastic_pools"):  # the launch retry is at its default, so not written
        return text
    data["launch_retry"] = LAUNCH_RETRY
    data["orphan_grace_seconds"] = ORPHAN_GRACE_SECONDS
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


# "slurmd-boot-time": the elastic nodes' slurmd command line.
SLURMD_ELASTIC_DROPIN = "/etc/slurmstack/slurmd-elastic.conf"


def patch_slurmd_elastic(text: str) -> str:
    slurmd = "/usr/sbin/slurmd -D -s "
    if slurmd not in text:
        raise ValueError(f"the elastic slurmd drop-in no longer runs {slurmd!r}")
    return text.replace(slurmd, slurmd + "-b ")


# "sackd": the login nodes' unit runs the stand-in.
SACKD_UNIT_PATH = "/etc/systemd/system/slurmstack-sackd.service"


def patch_sackd_unit(text: str) -> str:
    sackd = "ExecStart=/usr/sbin/sackd "
    if sackd not in text:
        raise ValueError(f"the sackd unit no longer runs {sackd!r}")
    return text.replace(sackd, "ExecStart=/usr/local/sbin/vcluster-sackd ")


# "controller-timeout": with a backup controller (head_node.backup) the rendered SlurmctldTimeout
# (60 s) becomes 10 s, so a takeover takes seconds, not a minute (the takeover's own logic, and
# the heartbeat the agents' gate reads, are Slurm's).
BACKUP_SLURMCTLD_TIMEOUT = 10


def patch_backup_slurm_conf(text: str) -> str:
    lines = [
        f"SlurmctldTimeout={BACKUP_SLURMCTLD_TIMEOUT}" if x.startswith("SlurmctldTimeout=") else x
        for x in text.splitlines()
    ]
    return "\n".join(lines) + "\n"


STORE_PATCHES = {
    SLURM_CONF_PATH: lambda text: patch_backup_slurm_conf(
        patch_elastic_slurm_conf(patch_slurm_conf(text))
    ),
    "/etc/slurmstack/node.json": patch_node_config,
    SLURMD_ELASTIC_DROPIN: patch_slurmd_elastic,
}
# Applied too when the nodes run this machine's Slurm (not the image's).
HOST_SLURM_STORE_PATCHES = {
    SACKD_UNIT_PATH: patch_sackd_unit,
}

"""mounts: EFS, FSx for Lustre and FSx for OpenZFS in /etc/fstab, mounted and retried until
they answer: the stack's own file systems, and file systems of yours, whose names the stack
looked up and published under contract.existing_parameter."""

from __future__ import annotations

from dataclasses import replace

from ...contract import (
    COMMAND_DIRS,
    EXISTING_DNS,
    EXISTING_MOUNT_NAME,
    LNET_EFA_UNIT,
    MOUNT_HELPERS,
    DeployParameter,
    Mount,
    MountKind,
    NodeEnv,
    existing_parameter,
)
from .. import system
from ..context import AgentError, Context
from . import lnet

# NodeEnv field -> the deploy-time parameter it comes from, by the kind of mount that needs it.
STORAGE_PARAMETERS = {
    MountKind.EFS: {"efs_id": DeployParameter.EFS_ID},
    MountKind.LUSTRE: {
        "lustre_dns": DeployParameter.LUSTRE_DNS,
        "lustre_mount_name": DeployParameter.LUSTRE_MOUNT_NAME,
    },
}
# Amazon EFS User Guide, "Mounting EFS file systems using the EFS mount helper": the `efs`
# type of amazon-efs-utils (in the image) with `tls` encrypts the traffic in transit; the
# helper adds the NFS options the guide recommends (nfsvers=4.1, rsize/wsize 1 MiB, hard,
# timeo=600, retrans=2, noresvport) itself.
EFS_OPTIONS = "tls"
LUSTRE_OPTIONS = "noatime,flock"
# FSx for OpenZFS User Guide, "Mounting from an Amazon EC2 instance": NFS 4.1 with 1 MiB
# transfers; nconnect=16 for many parallel streams (the guide's recommendation for
# throughput), hard mounts so a failover pauses I/O instead of failing it.
OPENZFS_OPTIONS = "nfsvers=4.1,rsize=1048576,wsize=1048576,nconnect=16,hard,timeo=600"


def storage_env(ctx: Context, timeout: float = 3600.0, poll: float = 10.0) -> NodeEnv:
    """node.env with the names of the file systems this role mounts, waiting for each
    parameter (they appear once the file system exists) and recording it."""
    env = ctx.node_env()
    kinds = {m.kind for m in ctx.config().mounts if not m.file_system_id}
    wanted = {k: v for kind in sorted(kinds) for k, v in STORAGE_PARAMETERS[kind].items()}
    missing = {name: param for name, param in wanted.items() if not getattr(env, name)}
    if missing:
        found = {name: ctx.wait_parameter(param, timeout, poll) for name, param in missing.items()}
        env = replace(env, **found)
        ctx.write_node_env(env)
    return env


def mounts(ctx: Context, attempts: int = 30, delay: float = 10.0) -> list[str]:
    config = ctx.config()
    env = storage_env(ctx)
    done = []
    for mount in config.mounts:
        require_mount_helper(ctx, mount.kind)
        if mount.file_system_id:
            source, fstype, options = existing_source(ctx, mount)
        elif mount.kind is MountKind.EFS:
            # The mount helper finds the mount target from the id (and the instance's region).
            source = f"{env.efs_id}:/"
            fstype, options = "efs", EFS_OPTIONS
        elif mount.kind is MountKind.LUSTRE:
            # The same source over TCP or EFA: the client reaches the MGS at its @tcp
            # address, discovery then finds the servers' EFA NIDs, which LNet prefers.
            source = f"{env.lustre_dns}@tcp:/{env.lustre_mount_name}"
            fstype, options = "lustre", LUSTRE_OPTIONS
            if config.lustre_efa_interfaces:
                lnet.lnet_efa(ctx, attempts=attempts, delay=delay)
                # At every later boot systemd runs the LNet setup before this mount.
                options += f",x-systemd.requires={LNET_EFA_UNIT}"
        else:
            raise AgentError(f"unknown mount kind {mount.kind!r}")
        system.fstab(ctx, source, mount.path, fstype, f"{options},_netdev,nofail")
        if not system.mounted(ctx, mount.path):
            system.mkdir(ctx, mount.path)
            system.retry(ctx, ["mount", mount.path], attempts, delay)
        done.append(mount.path)
    return done


def existing_source(
    ctx: Context, mount: Mount, timeout: float = 600.0, poll: float = 10.0
) -> tuple[str, str, str]:
    """(source, type, options) of a file system of yours: EFS by its id; Lustre and OpenZFS
    by the names the stack looked up (over TCP: EFA to a file system the stack did not make
    would need its security group's all-traffic rules, which are yours to give)."""
    fid = mount.file_system_id
    if mount.kind is MountKind.EFS:
        return f"{fid}:/", "efs", EFS_OPTIONS
    dns = ctx.wait_parameter(existing_parameter(fid, EXISTING_DNS), timeout, poll)
    if mount.kind is MountKind.LUSTRE:
        name = ctx.wait_parameter(existing_parameter(fid, EXISTING_MOUNT_NAME), timeout, poll)
        return f"{dns}@tcp:/{name}", "lustre", LUSTRE_OPTIONS
    if mount.kind is MountKind.OPENZFS:
        return f"{dns}:{mount.export_path}", "nfs", OPENZFS_OPTIONS
    raise AgentError(f"unknown mount kind {mount.kind!r} for {fid}")


def require_mount_helper(ctx: Context, kind: MountKind) -> None:
    """The image carries each file system's client (the Lustre client built for its kernel,
    amazon-efs-utils): nothing is installed at boot, a missing one fails the step."""
    helper = MOUNT_HELPERS.get(kind)
    if helper is None:
        return
    if not any(ctx.path(f"{d}/{helper}").exists() for d in COMMAND_DIRS):
        raise AgentError(
            f"{helper} is missing: the image lacks the {kind.value} client (the image contract, "
            "README 'Images'); nothing is installed at boot"
        )

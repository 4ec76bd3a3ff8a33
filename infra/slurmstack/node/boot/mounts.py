"""mounts: EFS and FSx for Lustre in /etc/fstab, mounted and retried until they answer."""

from __future__ import annotations

from dataclasses import replace

from ...contract import (
    COMMAND_DIRS,
    LNET_EFA_UNIT,
    MOUNT_HELPERS,
    DeployParameter,
    MountKind,
    NodeEnv,
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


def storage_env(ctx: Context, timeout: float = 3600.0, poll: float = 10.0) -> NodeEnv:
    """node.env with the names of the file systems this role mounts, waiting for each
    parameter (they appear once the file system exists) and recording it."""
    env = ctx.node_env()
    kinds = {m.kind for m in ctx.config().mounts}
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
        if mount.kind is MountKind.EFS:
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

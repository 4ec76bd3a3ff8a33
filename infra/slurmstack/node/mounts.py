"""mounts: EFS and FSx for Lustre in /etc/fstab, mounted and retried until they answer."""

from __future__ import annotations

import shutil
from dataclasses import replace

from ..contract import LNET_EFA_UNIT, DeployParameter, MountKind, NodeEnv
from . import lnet, system
from .context import AgentError, Context, write_atomic

# NodeEnv field -> the deploy-time parameter it comes from, by the kind of mount that needs it.
STORAGE_PARAMETERS = {
    MountKind.EFS: {"efs_id": DeployParameter.EFS_ID},
    MountKind.LUSTRE: {
        "lustre_dns": DeployParameter.LUSTRE_DNS,
        "lustre_mount_name": DeployParameter.LUSTRE_MOUNT_NAME,
    },
}
# apt on a running node waits for another apt (unattended-upgrades) instead of failing.
APT_GET = ("apt-get", "-o", "DPkg::Lock::Timeout=1200", "-y", "-q")

# Amazon EFS User Guide, "Mounting on Amazon EC2 Linux instances using the NFS client".
EFS_OPTIONS = "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport"
LUSTRE_OPTIONS = "noatime,flock"
# FSx for Lustre client for Ubuntu, from the FSx client repository (FSx User Guide,
# "Installing the Lustre client").
FSX_KEY_URL = (
    "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"
)
FSX_REPO = "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"
FSX_KEYRING = "/usr/share/keyrings/fsx-ubuntu-public-key.gpg"


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
        if mount.kind is MountKind.EFS:
            source = f"{env.efs_id}.efs.{config.region}.amazonaws.com:/"
            fstype, options = "nfs4", EFS_OPTIONS
        elif mount.kind is MountKind.LUSTRE:
            _lustre_client(ctx)
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


def _lustre_client(ctx: Context) -> None:
    if shutil.which("mount.lustre") or ctx.path("/sbin/mount.lustre").exists():
        return
    codename = ctx.sh("lsb_release", "-cs").stdout.strip()
    ctx.sh("sh", "-c", f"curl -fsSL {FSX_KEY_URL} | gpg --dearmor -o {FSX_KEYRING}")
    source = f"deb [signed-by={FSX_KEYRING}] {FSX_REPO} {codename} main\n"
    write_atomic(
        ctx.path("/etc/apt/sources.list.d/fsxlustreclientrepo.list"), source.encode(), 0o644
    )
    ctx.sh(*APT_GET, "update")
    kernel = ctx.sh("uname", "-r").stdout.strip()
    ctx.sh(*APT_GET, "install", f"lustre-client-modules-{kernel}")

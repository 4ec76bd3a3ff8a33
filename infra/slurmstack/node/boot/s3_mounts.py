"""s3-mounts: the buckets and prefixes node.json lists, mounted with Mountpoint for Amazon S3
(mount-s3, baked into the image; image_pins.json, mountpoint_s3), after the file systems and the
scratch its cache lives on.

Mountpoint runs as root (this step, and systemd at later boots from /etc/fstab), so it takes the
instance role's credentials from the metadata service, which the node's firewall lets only root
reach (slurmstack.imds_firewall). With allow-other, job users read (and, on a writable mount,
create) files through FUSE; they never see the credentials: not in the process (root's), not in
its environment (nothing is passed), not on disk (the cache directory is root's, 0700).

Flags and fstab keys are Mountpoint's CONFIGURATION.md at the pinned release ("Mounting a
bucket prefix", "File modifications and deletions", "Caching configuration", "Automatically
mounting an S3 bucket at boot": _netdev, nosuid and nodev are required in fstab).
"""

from __future__ import annotations

import os

from ...contract import COMMAND_DIRS, MOUNT_HELPERS, DeployParameter, MountKind, S3Mount
from .. import system
from ..context import AgentError, Context

MOUNT_S3 = MOUNT_HELPERS[MountKind.MOUNTPOINT_S3]
# A writable mount lets every job user create objects (new files; no overwrite or delete
# unless the definition allows them): directories 0777. Read-only ones keep Mountpoint's modes.
WRITABLE_DIR_MODE = "0777"


def mount_s3_path(ctx: Context) -> str:
    """The image's mount-s3 (the boot installs nothing)."""
    for directory in COMMAND_DIRS:
        if ctx.path(f"{directory}/{MOUNT_S3}").exists():
            return f"{directory}/{MOUNT_S3}"
    raise AgentError(
        f"{MOUNT_S3} is missing: the image lacks Mountpoint for Amazon S3 (the image contract, "
        "docs/data.md); nothing is installed at boot"
    )


def options(mount: S3Mount) -> list[tuple[str, str | None]]:
    """Mountpoint's options as (name, value or None), shared by the command line and fstab."""
    found: list[tuple[str, str | None]] = [("region", mount.region)]
    if mount.read_only:
        found.append(("read-only", None))
    else:
        found.append(("dir-mode", WRITABLE_DIR_MODE))
        if mount.allow_delete:
            found.append(("allow-delete", None))
        if mount.allow_overwrite:
            found.append(("allow-overwrite", None))
    if mount.allow_other:
        found.append(("allow-other", None))
    if mount.cache_dir:
        found.append(("cache", mount.cache_dir))
        if mount.cache_max_mib is not None:
            found.append(("max-cache-size", str(mount.cache_max_mib)))
    if mount.metadata_ttl_seconds is not None:
        found.append(("metadata-ttl", str(mount.metadata_ttl_seconds)))
    return found


def command(program: str, bucket: str, mount: S3Mount) -> list[str]:
    cmd = [program, bucket, mount.path]
    if mount.prefix:
        cmd += ["--prefix", mount.prefix]
    for name, value in options(mount):
        cmd += [f"--{name}"] if value is None else [f"--{name}", value]
    return cmd


def fstab_options(mount: S3Mount) -> str:
    """The fstab options field: Mountpoint's required _netdev,nosuid,nodev, nofail (a node
    boots without its bucket rather than not at all), ro or rw, then its own options."""
    words = ["_netdev", "nosuid", "nodev", "nofail", "ro" if mount.read_only else "rw"]
    words += [name if value is None else f"{name}={value}" for name, value in options(mount)]
    return ",".join(w for w in words if w != "read-only")


def s3_mounts(ctx: Context, attempts: int = 30, delay: float = 10.0) -> list[str]:
    config = ctx.config()
    if not config.s3_mounts:
        return []
    program = mount_s3_path(ctx)
    done = []
    for mount in config.s3_mounts:
        bucket = mount.bucket or ctx.wait_parameter(DeployParameter.BUCKET)
        system.fstab(ctx, f"s3://{bucket}/{mount.prefix}", mount.path, MOUNT_S3,
                     fstab_options(mount))  # fmt: skip
        if mount.cache_dir:
            cache = ctx.path(mount.cache_dir)
            cache.mkdir(parents=True, exist_ok=True)
            os.chmod(cache, 0o700)  # root's: cached objects are not the job users' to read
        if not system.mounted(ctx, mount.path):
            system.mkdir(ctx, mount.path)
            # mount-s3 returns once the bucket is mounted (it then runs in the background).
            system.retry(ctx, command(program, bucket, mount), attempts, delay)
        done.append(mount.path)
    return done

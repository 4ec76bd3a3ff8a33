"""What a node's image must hold, and where the image build finds its inputs."""

from __future__ import annotations

import enum

from .node_config import MountKind

__all__ = [
    "ACCOUNTING_COMMANDS",
    "COMMAND_DIRS",
    "IMAGE_ACCOUNTING_ITEMS",
    "IMAGE_BASE_ITEMS",
    "IMAGE_BUNDLE_DIR",
    "IMAGE_DIRECTORY_ITEMS",
    "IMAGE_HEAD_ITEMS",
    "IMAGE_LOCAL_DATABASE_ITEMS",
    "IMAGE_LOGIN_ITEMS",
    "IMAGE_MANIFEST_PATH",
    "IMAGE_MOUNT_ITEMS",
    "IMAGE_PREFIX",
    "IMAGE_SCRATCH_ITEMS",
    "IMAGE_WORKER_ITEMS",
    "LOCAL_DATABASE_COMMANDS",
    "MOUNT_HELPERS",
    "PYXIS_PLUGIN",
    "ImageItem",
    "image_item",
]

# --- the node image ----------------------------------------------------------------------


# What a node's image must hold, as items ``KIND:NAME``: ``cmd:NAME`` an executable in one of
# COMMAND_DIRS, ``file:PATH`` a file, ``py:MODULE`` importable by the system python3. The plan
# lists a role's items (slurmstack.plan.images); the first-boot script's ``check`` step checks
# them before anything else runs, and the image's test phase runs that same check.
class ImageItem(enum.StrEnum):
    COMMAND = "cmd"
    FILE = "file"
    MODULE = "py"


def image_item(kind: ImageItem, name: str) -> str:
    return f"{kind.value}:{name}"


# Where ``cmd:`` items are looked for: the PATH of runcmd and of systemd units.
COMMAND_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# Where `make install` of pyxis puts its SPANK plugin: the image bakes it there, plugstack.conf
# loads it.
PYXIS_PLUGIN = "/usr/local/lib/slurm/spank_pyxis.so"
# The build's record inside the image: every version baked (the test phase and operators read it).
IMAGE_MANIFEST_PATH = "/etc/slurmstack/image.json"
# The mount helper of each shared file system's client (amazon-efs-utils, the Lustre client,
# nfs-common's for OpenZFS, Mountpoint for Amazon S3): in the image; the agent's mount steps
# refuse to start without it.
MOUNT_HELPERS = {
    MountKind.EFS: "mount.efs",
    MountKind.LUSTRE: "mount.lustre",
    MountKind.OPENZFS: "mount.nfs",
    MountKind.MOUNTPOINT_S3: "mount-s3",
}


def _commands(*names: str) -> tuple[str, ...]:
    return tuple(image_item(ImageItem.COMMAND, name) for name in names)


# Every node: munge, the Slurm client, the metadata firewall's nft, the agent's boto3, and
# the tools that make people's accounts (the identities step).
IMAGE_BASE_ITEMS = (
    *_commands("munged", "scontrol", "nft", "useradd", "usermod", "groupadd"),
    image_item(ImageItem.MODULE, "boto3"),
)
# A login node: Slurm's clients configless (sackd), sshd, sudo, Slurm's accounting clients.
IMAGE_LOGIN_ITEMS = _commands("sackd", "sshd", "ssh-keygen", "sudo", "sbatch", "sacct", "sshare")
# People from a directory: SSSD and its NSS module and key lookup for sshd.
IMAGE_DIRECTORY_ITEMS = _commands("sssd", "sss_ssh_authorizedkeys")
IMAGE_HEAD_ITEMS = _commands("slurmctld")
IMAGE_WORKER_ITEMS = (
    *_commands("slurmd", "srun", "enroot"),
    image_item(ImageItem.FILE, PYXIS_PLUGIN),
)
IMAGE_SCRATCH_ITEMS = _commands("mdadm", "mkfs.ext4")  # the scratch step's RAID0 and file system
# Accounting on the head (slurm.accounting): slurmdbd and Slurm's accounting clients, and
# for the local database MariaDB's server, client and installer (the agent's accounting-db
# runs them). The head's boot checks them only when its definition turns them on.
ACCOUNTING_COMMANDS = ("slurmdbd", "sacctmgr", "sacct")
LOCAL_DATABASE_COMMANDS = ("mariadbd", "mariadb", "mariadb-install-db")
IMAGE_ACCOUNTING_ITEMS = _commands(*ACCOUNTING_COMMANDS)
IMAGE_LOCAL_DATABASE_ITEMS = _commands(*LOCAL_DATABASE_COMMANDS)
IMAGE_MOUNT_ITEMS = {
    MountKind.EFS: _commands(MOUNT_HELPERS[MountKind.EFS]),
    MountKind.LUSTRE: _commands(MOUNT_HELPERS[MountKind.LUSTRE], "lctl"),
    MountKind.OPENZFS: _commands(MOUNT_HELPERS[MountKind.OPENZFS]),
    MountKind.MOUNTPOINT_S3: _commands(MOUNT_HELPERS[MountKind.MOUNTPOINT_S3]),
}

# The build: bundles in the cluster bucket under IMAGE_PREFIX (read by the image build role
# only, never by nodes), fetched to IMAGE_BUNDLE_DIR on the build and test instances.
IMAGE_PREFIX = "images/"
IMAGE_BUNDLE_DIR = "/var/lib/slurmstack/image/bundle"

"""The boot room's subcommands: what a node runs, in order, to become itself (the first-boot
script's steps and the units before slurmd and slurmctld start)."""

from __future__ import annotations

import argparse
import json

from ...contract import Command
from ..context import Context
from ..subcommand import Subcommand, step
from . import (
    config_sync,
    handback,
    join_hook,
    lnet,
    mounts,
    munge,
    params,
    s3_mounts,
    scratch,
    state_volume,
)


def _sync_config(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps({"changed": config_sync.sync_config(ctx)}))
    return 0


def _handback(ctx: Context, _args: argparse.Namespace) -> int:
    print(json.dumps({"handback": handback.handback(ctx)}))
    return 0


COMMANDS = (
    Subcommand(
        Command.SYNC_CONFIG,
        "read the manifest (named by its parameter), download this role's files from the "
        "config store, check their sha256, write them atomically; print what changed (head: "
        "enable the reaper's timer where it is disabled)",
        _sync_config,
    ),
    Subcommand(
        Command.PARAMS,
        "wait for the deploy-time SSM parameters this role needs to start its Slurm daemon (a "
        "worker: the head's address), write node.env, name the node (<pool>-<n>, n = low 16 "
        "bits of its private address)",
        step(params.params),
    ),
    Subcommand(
        Command.HEAD_ADDRESS,
        "(before every slurmd start) the head node's address from its parameter into "
        "node.env and /etc/hosts; the address known so far if it cannot be read",
        step(params.head_address),
        where="worker",
    ),
    Subcommand(
        Command.MUNGE_KEY,
        "write /etc/munge/munge.key (0400, munge) from Secrets Manager",
        step(munge.munge_key),
    ),
    Subcommand(
        Command.SCRATCH,
        "RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path and kept "
        "in /etc/fstab (nofail); after a reboot the array is mounted again, after a stop and "
        "start (blank disks) made anew; fails when it cannot be mounted",
        step(scratch.scratch),
    ),
    Subcommand(
        Command.MOUNTS,
        "wait for the file systems' parameters, then EFS (TLS) and FSx for Lustre with the "
        "image's mount helpers, retried until they answer (Lustre over EFA: lnet-efa first)",
        step(mounts.mounts),
    ),
    Subcommand(
        Command.S3_MOUNTS,
        "the buckets and prefixes of storage.s3_mounts with Mountpoint for Amazon S3 (run as "
        "root: the instance role's credentials stay root's), in /etc/fstab and mounted now; "
        "cache on the NVMe scratch where the pool has one",
        step(s3_mounts.s3_mounts),
    ),
    Subcommand(
        Command.LNET_EFA,
        "LNet for an EFA-enabled FSx for Lustre file system: TCP on the primary interface, the "
        "pool's EFA interfaces, EFA preferred; idempotent, retried (also run by "
        "slurmstack-lustre-efa.service before the Lustre mount at every boot)",
        step(lnet.lnet_efa),
    ),
    Subcommand(
        Command.STATE_VOLUME,
        "the Slurm state EBS volume: find, format once, mount",
        step(state_volume.state_volume),
        where="head",
    ),
    Subcommand(
        Command.HANDBACK,
        "(before the head's slurmctld starts, head_node.backup) a backup controller in "
        "control saves Slurm's state and stops, so the head reads all of it",
        _handback,
        where="head",
    ),
    join_hook.COMMAND,
)

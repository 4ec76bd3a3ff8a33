"""slurmstack-node: the agent that configures a slurmstack node at boot.

A package of small modules (Python 3 standard library and boto3), installed from the cluster's
config store by the bootstrap in the node's cloud-init document. Subcommands:

  sync-config   read the manifest (named by its parameter), download this role's files from the config
                store, check their sha256, write them atomically; print what changed (head: enable
                the reaper's timer where it is disabled)
  params        wait for the deploy-time SSM parameters this role needs to start its Slurm
                daemon (a worker: the head's address), write node.env, name the node
                (<pool>-<n>, n = low 16 bits of its private address)
  head-address  (worker, before every slurmd start) the head node's address from its parameter
                into node.env and /etc/hosts; the address known so far if it cannot be read
  munge-key     write /etc/munge/munge.key (0400, munge) from Secrets Manager
  health        expected GPUs, Neuron and EFA devices present? If not, mark the instance
                Unhealthy in its Auto Scaling group and exit non-zero (slurmd never starts)
  scratch       RAID0 over the instance-store NVMe disks, mounted at the pool's scratch path and
                kept in /etc/fstab (nofail); after a reboot the array is mounted again, after a
                stop and start (blank disks) made anew; fails when it cannot be mounted
  mounts        wait for the file systems' parameters, then EFS and FSx for Lustre, retried until
                they answer (Lustre over EFA: lnet-efa first)
  lnet-efa      LNet for an EFA-enabled FSx for Lustre file system: TCP on the primary interface,
                the pool's EFA interfaces, EFA preferred; idempotent, retried (also run by
                slurmstack-lustre-efa.service before the Lustre mount at every boot)
  state-volume  (head) the Slurm state EBS volume: find, format once, mount
  accounting-db (head) the accounting database (local MariaDB on the state volume, or the external
                one) and slurmdbd, with the database password from Secrets Manager; idempotent
  accounting-apply
                (head) the definition's QoS, accounts and users, applied with sacctmgr; removes
                only what slurmstack created and the definition no longer names
  usage         (head) GPU hours and cost per account and per user over a period (--start,
                --end; default this month), from sacct and the pools' prices; --json
  reap          (head) delete the records of dead dynamic nodes: a replaced instance registers
                under a new name and the old record would stay DOWN for ever. Only nodes of the
                cluster's pools that slurmctld itself marked DOWN and not responding, with no
                job, longer than the grace period ago, and no live instance of the cluster at
                their address; run every few minutes by slurmstack-reaper.timer

Every filesystem path goes through --root (default /), so tests run on fake device trees.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .base import AgentError, log
from .node import Node
from .reaper import REAP_GRACE_SECONDS
from .usage import parse_when, render_table


def main(argv: list[str] | None = None, node: Node | None = None) -> int:
    parser = argparse.ArgumentParser(prog="slurmstack-node", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.environ.get("SLURMSTACK_ROOT", "/"))
    sub = parser.add_subparsers(dest="command", required=True)
    for name in (
        "sync-config",
        "params",
        "head-address",
        "munge-key",
        "health",
        "scratch",
        "mounts",
        "lnet-efa",
        "state-volume",
    ):
        sub.add_parser(name)
    reap = sub.add_parser("reap", help="delete the records of dead dynamic nodes (head node)")
    reap.add_argument(
        "--grace",
        type=float,
        default=REAP_GRACE_SECONDS,
        help="seconds a node must have been DOWN (default %(default)s)",
    )
    reap.add_argument("--dry-run", action="store_true", help="print what would be deleted")
    reap.add_argument(
        "--no-ec2", action="store_true", help="skip the check against the cluster's instances"
    )
    # Accounting (slurmstack.node.accounting_db, .associations, .usage).
    sub.add_parser("accounting-db")
    apply = sub.add_parser("accounting-apply")
    apply.add_argument("--dry-run", action="store_true", help="print what would be done")
    usage = sub.add_parser("usage")
    usage.add_argument("--start", help="YYYY-MM-DD[THH:MM[:SS]] (default: this month's first day)")
    usage.add_argument("--end", help="YYYY-MM-DD[THH:MM[:SS]] (default: now)")
    usage.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    node = node or Node(root=args.root)
    try:
        if args.command == "sync-config":
            print(json.dumps({"changed": node.sync_config()}))
        elif args.command == "params":
            node.params()
        elif args.command == "head-address":
            node.head_address()
        elif args.command == "munge-key":
            node.munge_key()
        elif args.command == "health":
            if node.health():
                return 1
        elif args.command == "scratch":
            node.scratch()
        elif args.command == "mounts":
            node.mounts()
        elif args.command == "lnet-efa":
            node.lnet_efa()
        elif args.command == "state-volume":
            node.state_volume()
        elif args.command == "accounting-db":
            print(json.dumps(node.accounting_db(), sort_keys=True))
        elif args.command == "accounting-apply":
            result = node.accounting_apply(dry_run=args.dry_run)
            print(json.dumps(result, sort_keys=True))
            if result.get("failed"):
                return 1
        elif args.command == "usage":
            return _usage(node, args)
        elif args.command == "reap":
            result = node.reap(grace=args.grace, ec2=not args.no_ec2, dry_run=args.dry_run)
            print(json.dumps(result, sort_keys=True))
            if result["failed"]:
                return 1
    except AgentError as exc:
        log(f"{args.command}: {exc}")
        return 1
    return 0


def _usage(node: Node, args: argparse.Namespace) -> int:
    try:
        start = parse_when(args.start) if args.start else None
        end = parse_when(args.end) if args.end else None
    except ValueError as exc:
        log(f"usage: {exc}")
        return 2
    report = node.usage(start, end)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        print(render_table(report, list(node.require_accounting()["pools"])), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

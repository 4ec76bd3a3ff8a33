"""prune-images (head): deregister the cluster's old AMIs and delete their snapshots.

Every bake makes an AMI and a root snapshot (120 GiB for an NVIDIA image) that outlive the
Image Builder image the stack replaces, so they pile up, billed as snapshot storage. An AMI is
the cluster's when it carries the cluster's tag and an image key (the stack tags AMIs and their
root snapshots so: slurmstack.stack.image). One goes only when nothing may still need it:

- it is not among the ``keep`` newest of its image key (2 by default: the image in service and
  the one before it);
- no launch template of the cluster names it in its two newest versions (the one the pools
  launch and the one an instance refresh rolls back to);
- no instance of the cluster, in any state but terminated, runs it (the head included).

Its snapshots go with it (only those tagged as the cluster's: the head's role may delete no
other). ``--dry-run`` says what would go. Run on the head when an operator asks (docs/images.md,
"Old images")."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import Any

from ...contract import CLUSTER_TAG, IMAGE_TAG, Command
from ..context import Context, log
from ..subcommand import Subcommand

KEEP_PER_IMAGE = 2
ROLLBACK_VERSIONS = 2  # a template's newest versions whose AMIs stay: in service, rollback


def cluster_images(ctx: Context, cluster: str) -> list[dict[str, Any]]:
    pages = (
        ctx.aws.ec2()
        .get_paginator("describe_images")
        .paginate(
            Owners=["self"],
            Filters=[
                {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
                {"Name": "tag-key", "Values": [IMAGE_TAG]},
            ],
        )
    )
    return [dict(image) for page in pages for image in page["Images"]]


def templated_images(ctx: Context, cluster: str) -> set[str]:
    """AMIs of the newest ROLLBACK_VERSIONS versions of every launch template of the cluster."""
    ec2 = ctx.aws.ec2()
    templates = [
        t
        for page in ec2.get_paginator("describe_launch_templates").paginate(
            Filters=[{"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]}]
        )
        for t in page["LaunchTemplates"]
    ]
    found = set()
    for template in templates:
        latest = int(template["LatestVersionNumber"])
        wanted = [str(v) for v in range(max(1, latest - ROLLBACK_VERSIONS + 1), latest + 1)]
        answer = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=wanted
        )
        for version in answer["LaunchTemplateVersions"]:
            image = version.get("LaunchTemplateData", {}).get("ImageId")
            if image:
                found.add(str(image))
    return found


def running_images(ctx: Context, cluster: str) -> set[str]:
    """AMIs of the cluster's instances in any state but terminated."""
    pages = (
        ctx.aws.ec2()
        .get_paginator("describe_instances")
        .paginate(
            Filters=[
                {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
                {
                    "Name": "instance-state-name",
                    "Values": ["pending", "running", "stopping", "stopped", "shutting-down"],
                },
            ]
        )
    )
    return {
        str(item["ImageId"])
        for page in pages
        for reservation in page["Reservations"]
        for item in reservation["Instances"]
    }


def _tags(image: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in image.get("Tags", [])}


def newest(images: Iterable[dict[str, Any]], keep: int) -> set[str]:
    """The ``keep`` newest AMIs of each image key."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for image in images:
        by_key.setdefault(_tags(image)[IMAGE_TAG], []).append(image)
    kept = set()
    for group in by_key.values():
        group.sort(key=lambda i: str(i.get("CreationDate", "")), reverse=True)
        kept |= {str(i["ImageId"]) for i in group[:keep]}
    return kept


def snapshots_of(image: dict[str, Any]) -> list[str]:
    return [
        str(m["Ebs"]["SnapshotId"])
        for m in image.get("BlockDeviceMappings", [])
        if m.get("Ebs", {}).get("SnapshotId")
    ]


def prune_images(ctx: Context, keep: int = KEEP_PER_IMAGE, dry_run: bool = False) -> dict[str, Any]:
    cluster = ctx.config().cluster
    images = cluster_images(ctx, cluster)
    needed = {
        "newest": newest(images, keep),
        "launch templates": templated_images(ctx, cluster),
        "instances": running_images(ctx, cluster),
    }
    result: dict[str, Any] = {"kept": {}, "pruned": [], "failed": {}}
    ec2 = ctx.aws.ec2()
    for image in sorted(images, key=lambda i: str(i.get("CreationDate", ""))):
        ami = str(image["ImageId"])
        why = [reason for reason, amis in needed.items() if ami in amis]
        if why:
            result["kept"][ami] = why
            continue
        snapshots = snapshots_of(image)
        log(
            f"prune-images: {ami} ({_tags(image)[IMAGE_TAG]}, {image.get('CreationDate')}) "
            f"and {', '.join(snapshots) or 'no snapshot'}{' (dry run)' if dry_run else ''}"
        )
        if dry_run:
            result["pruned"].append(ami)
            continue
        try:
            ec2.deregister_image(ImageId=ami)
            for snapshot in snapshots:
                ec2.delete_snapshot(SnapshotId=snapshot)
            result["pruned"].append(ami)
        except Exception as exc:  # botocore's ClientError: not permitted, or in use after all
            result["failed"][ami] = str(exc)
    return result


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep", type=int, default=KEEP_PER_IMAGE, help="newest AMIs kept per image key"
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be pruned")


def _prune(ctx: Context, args: argparse.Namespace) -> int:
    if args.keep < 1:
        print("prune-images: --keep must be at least 1 (the image in service)")
        return 2
    result = prune_images(ctx, keep=args.keep, dry_run=args.dry_run)
    print(json.dumps(result, sort_keys=True))
    return 1 if result["failed"] else 0


# The row of slurmstack.node.commands' table, as Subcommand takes it.
COMMAND = Subcommand(
    Command.PRUNE_IMAGES,
    "deregister the cluster's AMIs no launch template's two newest versions and no instance "
    "uses, beyond the newest --keep (2) per image, and delete their snapshots; --dry-run says "
    "which",
    _prune,
    _arguments,
    where="head",
)

"""Tags: the user's tags go on every AWS resource next to the ones slurmstack adds.

Limits from "Tagging your AWS resources" (AWS General Reference, tag naming limits and
requirements): at most 50 user tags per resource; keys of 1 to 128 and values of 0 to 256
Unicode characters; letters, digits, spaces and + - = . _ : / @ (the set every service
accepts; EC2 alone allows more); the aws: prefix, in any case, is reserved for AWS.
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import error
from slurmstack.contract import CLUSTER_TAG, POOL_TAG, ROLE_TAG, TAG_PREFIX
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec

MAX_TAGS = 50
MAX_KEY = 128
MAX_VALUE = 256
TAG_PUNCTUATION = frozenset("+-=._:/@ ")

# Tags slurmstack puts on every resource it creates (the stack imports this tuple): the
# resource name, the cluster, the role (head or the pool name) and, on pool resources, the
# pool. User tags must leave room for them and must not reuse their prefix.
SLURMSTACK_TAG_KEYS = ("Name", CLUSTER_TAG, ROLE_TAG, POOL_TAG)
SLURMSTACK_TAG_PREFIX = TAG_PREFIX


def _allowed(text: str) -> bool:
    return all(c.isalnum() or c.isspace() or c in TAG_PUNCTUATION for c in text)


# why: AWS refuses a 51st tag on a resource; slurmstack's own tags count too.
@rule
def tag_count(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    room = MAX_TAGS - len(SLURMSTACK_TAG_KEYS)
    if len(spec.tags) > room:
        yield error(
            "tags",
            f"{len(spec.tags)} tags, but a resource holds {MAX_TAGS} and slurmstack adds "
            f"{len(SLURMSTACK_TAG_KEYS)} ({', '.join(SLURMSTACK_TAG_KEYS)}); keep at most {room}",
        )


# why: AWS refuses an empty tag key or one longer than 128 characters.
@rule
def tag_key_length(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.tags:
        if not 1 <= len(key) <= MAX_KEY:
            yield error(
                f"tags.{key}",
                f"tag key of {len(key)} characters; AWS takes 1 to {MAX_KEY}",
            )


# why: AWS refuses a tag value longer than 256 characters.
@rule
def tag_value_length(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key, value in spec.tags.items():
        if len(value) > MAX_VALUE:
            yield error(
                f"tags.{key}",
                f"tag value of {len(value)} characters; AWS takes at most {MAX_VALUE}",
            )


# why: AWS reserves the aws: prefix (any case) and refuses user tags that use it.
@rule
def tag_aws_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.tags:
        if key.lower().startswith("aws:"):
            yield error(f"tags.{key}", f"tag key {key!r} uses the aws: prefix, reserved for AWS")


# why: services other than EC2 (FSx, EFS, S3, Secrets Manager) refuse other characters.
@rule
def tag_characters(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key, value in spec.tags.items():
        for kind, text in (("key", key), ("value", value)):
            if not _allowed(text):
                bad = sorted({c for c in text if not _allowed(c)})
                yield error(
                    f"tags.{key}",
                    f"tag {kind} {text!r} contains {', '.join(repr(c) for c in bad)}; AWS tags "
                    "take letters, digits, spaces and + - = . _ : / @",
                )


# why: a user tag under slurmstack: would overwrite or impersonate slurmstack's own tags,
# which its SSM commands and IAM conditions select resources by.
@rule
def tag_reserved_prefix(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for key in spec.tags:
        if key.lower().startswith(SLURMSTACK_TAG_PREFIX) or key == "Name":
            yield error(
                f"tags.{key}",
                f"tag key {key!r} is set by slurmstack on every resource; choose another key",
            )

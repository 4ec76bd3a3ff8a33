"""The user data as EC2 receives it: the rendered cloud-init document (slurmstack.render, plain
text, as ``slurmstack render`` writes it and the golden files hold it), gzip-compressed, then
base64 for the provider. cloud-init reads gzip user data itself; EC2's 16 KB limit applies to
these bytes before base64, and the plain document has outgrown it. No Pulumi here."""

from __future__ import annotations

import base64
import hashlib

from slurmstack import render, stable_gzip
from slurmstack.plan import ClusterPlan


def ec2_user_data(plan: ClusterPlan, role: str) -> bytes:
    """The bytes EC2 gets for ``role``: the same for the same document on every machine (see
    slurmstack.stable_gzip), so a deploy from elsewhere changes no launch template."""
    data = stable_gzip.compress(render.user_data(plan, role).encode())
    if len(data) > render.USER_DATA_LIMIT:
        raise ValueError(
            f"user data of {role} is {len(data)} bytes gzip-compressed, over EC2's "
            f"{render.USER_DATA_LIMIT} bytes"
        )
    return data


def encoded_user_data(plan: ClusterPlan, role: str) -> str:
    """Base64 of ec2_user_data (what launch templates and instances take)."""
    return base64.b64encode(ec2_user_data(plan, role)).decode()


def user_data_sha256(plan: ClusterPlan, role: str) -> str:
    """sha256 of the cloud-init document itself (plain text): what the head's tag records."""
    return hashlib.sha256(render.user_data(plan, role).encode()).hexdigest()

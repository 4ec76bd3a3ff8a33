"""The user data as EC2 receives it: the rendered cloud-init document (slurmstack.render, plain
text, as ``slurmstack render`` writes it and the golden files hold it), gzip-compressed, then
base64 for the provider. cloud-init reads gzip user data itself; EC2's 16 KB limit applies to
these bytes before base64, and the plain document has outgrown it. No Pulumi here."""

from __future__ import annotations

import base64
import hashlib
import itertools
import re

from slurmstack import render, stable_gzip
from slurmstack.plan import ClusterPlan

# A part starts at each file cloud-init writes: the parts that differ between pools (the header
# with their name, the environment, the firewall) are small, and the first-boot script, the
# largest, is the same in every document. Fewer parts compress better (no match crosses a part).
PART_START = re.compile(rb"^(?=  - path: )", re.MULTILINE)


def document_parts(document: bytes) -> list[bytes]:
    """``document`` cut before each ``write_files`` entry; the parts joined are the document."""
    starts = [m.start() for m in PART_START.finditer(document) if m.start() > 0]
    bounds = [0, *starts, len(document)]
    return [document[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def ec2_user_data(plan: ClusterPlan, role: str) -> bytes:
    """The bytes EC2 gets for ``role``: the same for the same document on every machine (see
    slurmstack.stable_gzip), so a deploy from elsewhere changes no launch template. One gzip
    member per part of the document, so the parts every pool shares are encoded once: at 64
    pools this was half of the program's time per pool."""
    document = render.user_data(plan, role).encode()
    data = stable_gzip.compress_parts(document_parts(document))
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

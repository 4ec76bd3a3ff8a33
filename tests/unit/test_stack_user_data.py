"""slurmstack.stack.user_data: what EC2 receives is each role's rendered cloud-init document,
gzip-compressed, well inside EC2's 16 KB, and decompresses to the rendered text."""

from __future__ import annotations

import base64
import gzip

import pytest

from slurmstack import stable_gzip
from slurmstack.render import USER_DATA_LIMIT, roles, user_data
from slurmstack.stack import user_data as ec2
from support.examples import EXAMPLE_IDS, example_plan

# Room left for the documents to grow: the compressed user data stays below this share of the
# limit (about 62% of it today, in one member per part: the first-boot script's one
# GetParameters and its patient retries of throttled steps took it from 48%).
HEADROOM = 0.70


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_compressed_user_data_is_under_the_limit_with_headroom(example: str) -> None:
    plan = example_plan(example)
    for role in roles(plan):
        data = ec2.ec2_user_data(plan, role)
        assert len(data) <= HEADROOM * USER_DATA_LIMIT, (role, len(data))
        assert gzip.decompress(data).decode() == user_data(plan, role)
        assert base64.b64decode(ec2.encoded_user_data(plan, role)) == data


def test_a_document_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = example_plan("p5-training")
    monkeypatch.setattr(ec2.stable_gzip, "compress_parts", lambda parts: b"".join(parts) * 2)
    with pytest.raises(ValueError, match=r"user data of train is \d+ bytes gzip-compressed"):
        ec2.ec2_user_data(plan, "train")


def test_the_parts_every_pool_shares_are_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first-boot script, the largest part, is the same in every pool's document: with
    the per-process cache it is compressed once however many pools there are."""
    plan = example_plan("p5-training")
    pools = [role for role in roles(plan) if role != "head"]
    documents = {role: user_data(plan, role).encode() for role in pools}
    parts = {role: ec2.document_parts(doc) for role, doc in documents.items()}
    for role, doc in documents.items():
        assert b"".join(parts[role]) == doc
        assert len(parts[role]) == doc.count(b"\n  - path: ") + 1
    shared = set.intersection(*(set(p) for p in parts.values()))
    assert max(map(len, shared)) > 10_000, "the first-boot script is not a shared part"

    encoded: list[bytes] = []
    original = stable_gzip.compress
    monkeypatch.setattr(
        stable_gzip, "compress", lambda data: encoded.append(data) or original(data)
    )
    stable_gzip._member.cache_clear()
    for role in pools:
        ec2.ec2_user_data(plan, role)
    assert len(encoded) == len(set(encoded)) == len(set().union(*(set(p) for p in parts.values())))
    assert max(map(len, shared)) in {len(data) for data in encoded}


def test_the_user_data_is_the_same_in_every_process() -> None:
    """The first-boot script carries contract sets (the retryable error codes): written in
    their hash order, the user data would change with PYTHONHASHSEED, from one `up` to the
    next, and every instance would be replaced."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    probe = (
        "import hashlib; from slurmstack.render import bootstrap_source; "
        "print(hashlib.sha256(bootstrap_source().encode()).hexdigest())"
    )
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root / "infra")}
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1

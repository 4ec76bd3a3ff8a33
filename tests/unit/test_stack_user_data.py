"""slurmstack.stack.user_data: what EC2 receives is each role's rendered cloud-init document,
gzip-compressed, well inside EC2's 16 KB, and decompresses to the rendered text."""

from __future__ import annotations

import base64
import gzip

import pytest

from helpers_examples import EXAMPLE_IDS, example_plan
from slurmstack.render import USER_DATA_LIMIT, roles, user_data
from slurmstack.stack import user_data as ec2

# Room left for the documents to grow: the compressed user data stays below this share of the
# limit (it is about 40% of it today, while the plain documents are about 94%).
HEADROOM = 0.6


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
    monkeypatch.setattr(ec2.stable_gzip, "compress", lambda data: data * 2)
    with pytest.raises(ValueError, match=r"user data of train is \d+ bytes gzip-compressed"):
        ec2.ec2_user_data(plan, "train")

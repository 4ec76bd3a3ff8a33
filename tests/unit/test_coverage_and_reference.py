"""Coverage and the generated reference: a cluster in any commercial Region that sells the
catalog's accelerated types validates (ap-southeast-1 was refused); no description in the
configuration reference stops mid-sentence; compute_subnet_prefix says what the code does."""

from __future__ import annotations

import copy
import ipaddress
import re

import pytest
from docs import reference_markdown

from slurmstack.catalog import load_catalog
from slurmstack.rules.efa import addresses_per_node, efa_interfaces
from slurmstack.rules.subnets import carve
from slurmstack.spec import ClusterSpec, NetworkSpec
from slurmstack.validate import validate_object
from support.checks import BASE

SENTENCE_END = (".", ".)", ")", "?")


@pytest.mark.parametrize(
    ("region", "pool_type"),
    [
        ("ap-southeast-1", "p4de.24xlarge"),
        ("ap-northeast-3", "g6e.12xlarge"),
        ("eu-central-2", "g6.12xlarge"),
        ("il-central-1", "g5.12xlarge"),
    ],
)
def test_a_cluster_validates_in_every_region_selling_accelerated_types(
    region: str, pool_type: str
) -> None:
    zone = load_catalog().regions[region].zones[0]
    data = copy.deepcopy(BASE)
    data.update(region=region, availability_zone=zone)
    data["pools"] = [{"name": "train", "instance_type": pool_type, "count": 2}]
    data["storage"] = {"home": {"type": "efs"}}
    data["head_node"] = {
        "instance_type": "m7i.4xlarge" if region != "il-central-1" else "m6i.4xlarge"
    }
    result = validate_object(data, source="test")
    assert result.ok, [f.line() for f in result.findings]


def _reference_texts() -> list[str]:
    texts = []
    for line in reference_markdown().splitlines():
        if line.startswith("| `"):
            texts.append(line.rsplit(" | ", 1)[-1].removesuffix(" |"))
        elif line and not line.startswith(("|", "#")):
            texts.append(line)  # a model's summary under its heading
    return texts


def test_no_reference_description_stops_mid_sentence() -> None:
    """main cut each model's summary at the docstring's first line break ('one Auto Scaling
    group of')."""
    texts = _reference_texts()
    assert len(texts) > 100
    cut = [t for t in texts if t and not t.rstrip().endswith(SENTENCE_END)]
    assert not cut, cut


def test_compute_subnet_prefix_says_what_the_code_does() -> None:
    description = NetworkSpec.model_fields["compute_subnet_prefix"].description or ""
    # The default: one bit longer than the VPC's, from its start; the public subnet at its end.
    spec = ClusterSpec.model_validate({**BASE, "network": {"vpc_cidr": "10.42.0.0/16"}})
    vpc, public, compute = carve(spec)
    assert vpc is not None and public is not None and compute is not None
    assert (
        compute == ipaddress.ip_network("10.42.0.0/17")
        and public.broadcast_address == vpc.broadcast_address
    )
    assert "one bit longer than the VPC's" in description and "from the start" in description
    assert "end of the VPC to the public subnet" in description
    # One address per node: a p5's 31 efa-only interfaces take none.
    p5 = load_catalog().instances["p5.48xlarge"]
    assert addresses_per_node(efa_interfaces(p5, True)) == 1
    assert "efa-only interfaces take none" in description
    assert not re.search(r"every worker interface .* takes an address", description, re.I)

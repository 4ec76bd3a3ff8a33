"""gp3 limits as AWS's current API documentation states them: the bounds of the root and
state volumes are cross-checked against the CreateVolume reference that botocore ships (the
EC2 API model the AWS SDKs are generated from), like the catalog against moto's data."""

from __future__ import annotations

import re
from typing import Any

import botocore.loaders
import pytest
from pydantic import ValidationError

from slurmstack.spec import GP3_MAX_GIB, GP3_MAX_IOPS, GP3_MAX_MIBPS, GP3_MIN_IOPS, RootVolume
from support.checks import definition, findings, set_in


def _create_volume_docs() -> dict[str, str]:
    model: Any = botocore.loaders.create_loader().load_service_model("ec2", "service-2")
    members = model["shapes"]["CreateVolumeRequest"]["members"]
    return {name: re.sub(r"<[^>]+>", "", members[name]["documentation"]) for name in members}


def _range(text: str, after: str) -> tuple[int, int]:
    match = re.search(after + r"[^0-9]*([\d,]+)\s*(?:\(default\))?\s*-\s*([\d,]+)", text)
    assert match, (after, text)
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def test_bounds_match_the_create_volume_reference() -> None:
    docs = _create_volume_docs()
    assert _range(docs["Iops"], "gp3:") == (GP3_MIN_IOPS, GP3_MAX_IOPS) == (3000, 80000)
    assert _range(docs["Throughput"], "Valid Range:")[1] == GP3_MAX_MIBPS == 2000
    assert _range(docs["Size"], "gp3:")[1] == GP3_MAX_GIB == 65536


def test_the_new_limits_are_accepted_and_the_ratios_still_apply() -> None:
    big = {"size_gib": 160, "iops": 80000, "throughput_mibps": 2000}
    assert RootVolume.model_validate(big).iops == 80000
    assert findings(definition(set_in("head_node.root_volume", big))) == []
    fast = {"size_gib": 200, "iops": 4000, "throughput_mibps": 2000}
    found = findings(definition(set_in("head_node.root_volume", fast)))
    assert [f.rule for f in found] == ["root-volume-throughput-ratio"]
    assert "needs at least 8000 IOPS" in found[0].message


@pytest.mark.parametrize(
    "volume",
    [{"iops": 80001}, {"throughput_mibps": 2001}, {"size_gib": 65537}],
)
def test_beyond_the_limits_is_refused(volume: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        RootVolume.model_validate(volume)

"""Messages a new user meets with realistic mistakes (issue 21's trial): each names the fix,
and no finding contradicts the definition or repeats another's cause."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.loader import load_file
from slurmstack.validate import validate_object
from support.checks import BASE

ROOT = Path(__file__).resolve().parents[2]


def lines(data: dict[str, Any]) -> list[str]:
    return [f.line() for f in validate_object(data, source="test").findings]


def base(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        (
            "capacity",
            "spot",
            "pools[0].capacity: capacity is a mapping: write {type: spot}, not 'spot' alone",
        ),
        (
            "capacity",
            "capacity-block",
            "pools[0].capacity: capacity is a mapping such as {type: on_demand} (type: "
            "on_demand, spot, capacity_block, capacity_reservation)",
        ),
    ],
)
def test_a_bare_capacity_type_says_to_write_a_mapping(
    where: str, value: str, expected: str
) -> None:
    data = base()
    data["pools"][0][where] = value
    found = lines(data)
    assert [line for line in found if line.startswith("pools[0].capacity:")] == [expected]


def test_a_bare_home_type_says_the_same() -> None:
    data = base()
    data["storage"]["home"] = "efs"
    assert "storage.home: home is a mapping: write {type: efs}, not 'efs' alone" in lines(data)


def test_a_mistyped_region_is_one_finding_that_names_the_zones_region() -> None:
    found = lines(base(region="us-est-1"))
    assert len(found) == 1, found
    assert found[0].startswith(
        "region: unknown region 'us-est-1' (did you mean 'us-east-1', the region of "
        "availability_zone 'us-east-1a'?)"
    )


def test_a_max_count_below_count_is_the_only_finding_about_the_pool_size() -> None:
    """With count 4 and max_count 0 the pool keeps 4 nodes running: no finding may speak of
    a pool of 0 (main warned 'has count 0' beside the error)."""
    data = base()
    data["pools"][0]["max_count"] = 0
    found = lines(data)
    assert found == [
        "pools[0].max_count: max_count 0 is below count 4: max_count is the most nodes pool "
        "'train' may have, count the ones always running; set max_count to 4 or more, or "
        "lower count"
    ]


def test_a_small_head_with_local_accounting_gets_a_sizing_warning_with_figures() -> None:
    data = base(head_node={"instance_type": "m7i.large"})
    (line,) = lines(data)
    assert line == (
        "head_node.instance_type: warning: head node m7i.large (2 vCPUs, 8 GiB) runs "
        "slurmctld, slurmdbd and MariaDB (the accounting database is local); MariaDB's buffer "
        "pool gets an eighth of its memory, 1 GiB, below the 2 GiB under which slurmdbd "
        "reports 'Database settings not recommended values' (Slurm's accounting guide asks "
        "for 4 GiB); give the head at least 16 GiB (e.g. m7i.xlarge), or set "
        "slurm.accounting.database.type: rds"
    )
    # RDS keeps MariaDB off the head; 16 GiB gives it the 2 GiB slurmdbd accepts.
    rds = base(head_node={"instance_type": "m7i.large"})
    rds["slurm"]["accounting"] = {"database": {"type": "rds"}}
    assert not any("MariaDB" in line for line in lines(rds))
    assert lines(base(head_node={"instance_type": "m7i.xlarge"})) == []


def test_home_elsewhere_than_home_is_refused_with_the_reason() -> None:
    data = base()
    data["storage"]["home"]["mount"] = "/shared"
    assert lines(data) == [
        "storage.home.mount: '/shared': users' home directories ($HOME) are /home/<user> on "
        "every node and stay there, so EFS at /shared would leave each $HOME on the node's "
        "own disk; keep mount: /home (for another shared path, storage.lustre.mount)"
    ]


def test_a_pulumi_secret_inside_the_definition_names_pulumi_secrets(tmp_path: Path) -> None:
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"]["slurmstack:cluster"]["tags"]["owner"] = {"secure": "v1:AAAABBBBCCCC"}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    found = [f.line() for f in load_file(path).findings]
    assert found == [
        "tags.owner: is a Pulumi secret (secure: ..., encrypted by `pulumi config set "
        "--secret`), which only the Pulumi CLI can decrypt; a definition holds no secrets (the "
        "accounting database's password is in Secrets Manager: "
        "slurm.accounting.database.password_secret), so set this value in plain text"
    ]


@pytest.mark.parametrize(
    ("where", "key", "says"),
    [
        ((), "login_nodes", "slurmstack has no separate login nodes: users log in to the head"),
        ((), "queues", "slurmstack calls these pools"),
        ((), "availability_zones", "a cluster lives in one availability zone"),
        (("pools", 0), "instance_types", "a pool has one instance_type"),
        (("pools", 0), "min_count", "count is a pool's always-running nodes"),
    ],
)
def test_a_key_for_a_feature_slurmstack_lacks_says_so(
    where: tuple[Any, ...], key: str, says: str
) -> None:
    data = base()
    node: Any = data
    for part in where:
        node = node[part]
    node[key] = ["x"]
    path = ".".join(str(p) for p in where).replace(".0", "[0]")
    prefix = f"{path}.{key}" if path else key
    found = [line for line in lines(data) if line.startswith(f"{prefix}:")]
    assert len(found) == 1, lines(data)
    assert found[0].startswith(f"{prefix}: {key!r} is no slurmstack setting: {says}")
    assert "did you mean" not in found[0]


def test_a_typo_still_gets_its_close_match() -> None:
    data = base()
    data["pools"][0]["instance_typ"] = "p5.48xlarge"
    assert any("did you mean 'instance_type'?" in line for line in lines(data))

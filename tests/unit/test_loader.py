"""The loader: every problem with the text or shape of a definition is one clear finding
with a path, never an exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurmstack.loader import load_file, load_object
from slurmstack.spec import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "p5-training.yaml"


def base() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def only(data: Any) -> tuple[str, str]:
    loaded = load_object(data)
    assert loaded.spec is None
    assert len(loaded.findings) == 1, [f.line() for f in loaded.findings]
    finding = loaded.findings[0]
    return finding.path, finding.message


def with_(path: str, value: Any) -> dict[str, Any]:
    data = base()
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
    node[key] = value
    return data


def test_example_loads_into_a_spec() -> None:
    loaded = load_file(EXAMPLE)
    assert loaded.findings == []
    assert isinstance(loaded.spec, ClusterSpec)
    assert loaded.spec.pools[0].capacity.reservation_id == "cr-0123456789abcdef0"


def test_json_file_and_stack_config_object_load_the_same_spec(tmp_path: Path) -> None:
    as_json = tmp_path / "cluster.json"
    as_json.write_text(json.dumps(base()))
    assert load_file(as_json).spec == load_file(EXAMPLE).spec == load_object(base()).spec


@pytest.mark.parametrize(
    ("path", "value", "where", "fragment"),
    [
        ("name", "LLM_Train", "name", "did you mean 'llm-train'?"),
        ("name", "-x", "name", "lowercase letters, digits and '-'"),
        ("pools.0.name", "Train", "pools[0].name", "did you mean 'train'?"),
        ("pools.0.local_scratch", "scratch", "pools[0].local_scratch", "an absolute path"),
        ("head_node.ami", "ami-XYZ", "head_node.ami", "an AMI id: 'ami-' and 8 to 17"),
        ("network.vpc_cidr", "10.42.0.1/16", "network.vpc_cidr", "did you mean '10.42.0.0/16'"),
        ("network.vpc_cidr", "fd00::/8", "network.vpc_cidr", "IPv6"),
        ("network.vpc_cidr", "big", "network.vpc_cidr", "not an IPv4 CIDR"),
        (
            "pools.0.capacity.type",
            "capacity-block",
            "pools[0].capacity.type",
            "did you mean 'capacity_block'",
        ),
        (
            "storage.lustre.deployment",
            "persistant_2",
            "storage.lustre.deployment",
            "did you mean 'PERSISTENT_2'",
        ),
        ("pools.0.count", "sixteen", "pools[0].count", "valid integer"),
        ("pools.0.count", -1, "pools[0].count", "greater than or equal to 0"),
        ("pools.0.efa", "maybe", "pools[0].efa", "or 'auto'"),
        ("network.ssh_cidrs", "0.0.0.0/0", "network.ssh_cidrs", "valid list (got text"),
        ("tags", ["team"], "tags", "valid dictionary (got a list"),
    ],
)
def test_model_errors_are_one_friendly_line(
    path: str, value: Any, where: str, fragment: str
) -> None:
    got_path, message = only(with_(path, value))
    assert got_path == where
    assert fragment in message


def test_unknown_key_names_the_key_and_a_close_match() -> None:
    data = base()
    data["pools"][0]["instance"] = "p5.48xlarge"
    got_path, message = only(data)
    assert got_path == "pools[0].instance"
    assert "unknown key 'instance'" in message
    assert "did you mean 'instance_type'?" in message
    assert "allowed keys here: ami, capacity, count" in message


def test_missing_key() -> None:
    data = base()
    del data["head_node"]
    assert only(data) == ("head_node", "required key is missing")


def test_every_model_error_is_reported_at_once() -> None:
    data = with_("name", "Bad")
    data["pools"][0]["count"] = "x"
    data["pools"][1]["efa"] = 3
    loaded = load_object(data)
    assert {f.path for f in loaded.findings} == {"name", "pools[0].count", "pools[1].efa"}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (None, "definition is empty"),
        ([], "not a list"),
        ("text", "not a str"),
        (3, "not a int"),
    ],
)
def test_not_a_mapping(data: Any, fragment: str) -> None:
    assert fragment in only(data)[1]


@pytest.mark.parametrize(
    ("name", "raw", "where", "fragment"),
    [
        ("bad.yaml", b"name: c\n  region: x\n", "bad.yaml:2:9", "malformed YAML"),
        ("tab.yaml", b"name:\n\t- x\n", "tab.yaml:2:1", "malformed YAML"),
        ("empty.yaml", b"", "empty.yaml", "definition is empty"),
        ("latin1.yaml", "name: café".encode("latin-1"), "latin1.yaml", "not UTF-8"),
        ("bad.json", b'{"name": "c",}', "bad.json:1:14", "malformed JSON"),
        ("deep.json", b"[" * 100000 + b"]" * 100000, "deep.json", "cannot read definition"),
        ("big.json", b'{"x": ' + b"9" * 5000 + b"}", "big.json", "cannot read definition"),
        ("deep.yaml", b"x: " + b"[" * 5000 + b"]" * 5000, "deep.yaml", "cannot read"),
    ],
)
def test_file_level_problems(
    tmp_path: Path, name: str, raw: bytes, where: str, fragment: str
) -> None:
    path = tmp_path / name
    path.write_bytes(raw)
    loaded = load_file(path)
    assert loaded.spec is None
    (finding,) = loaded.findings
    assert finding.path == str(tmp_path / where)
    assert fragment in finding.message


def test_unreadable_file(tmp_path: Path) -> None:
    loaded = load_file(tmp_path / "missing.yaml")
    (finding,) = loaded.findings
    assert "cannot read file" in finding.message


STACK_FILE = ROOT / "Pulumi.dev.yaml"


def test_a_stack_file_is_read_under_config_slurmstack_cluster(tmp_path: Path) -> None:
    """Pulumi.<stack>.yaml files are definitions too: the object under slurmstack:cluster."""
    loaded = load_file(STACK_FILE)
    assert loaded.findings == []
    assert loaded.spec == load_file(EXAMPLE).spec
    assert (
        loaded.definition == yaml.safe_load(STACK_FILE.read_text())["config"]["slurmstack:cluster"]
    )


def _stack(tmp_path: Path, config: Any) -> Path:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


@pytest.mark.parametrize(
    ("config", "path", "fragment"),
    [
        ({"aws:region": "us-east-1"}, "config.slurmstack:cluster", "missing: a stack file"),
        ({"cluster": {"name": "x"}}, "config.slurmstack:cluster", "write slurmstack:cluster"),
        (
            {"slurmstack:cluster": {"secure": "AAABADf2"}},
            "config.slurmstack:cluster",
            "is a Pulumi secret (secure:",
        ),
        (
            {"aws:region": "us-west-2", "slurmstack:cluster": base()},
            "config.aws:region",
            "'us-west-2' differs from the definition's region 'us-east-1'",
        ),
    ],
)
def test_stack_file_problems_are_one_finding_each(
    tmp_path: Path, config: Any, path: str, fragment: str
) -> None:
    stack = _stack(tmp_path, config)
    loaded = load_file(stack)
    assert loaded.spec is None
    assert [f.path for f in loaded.findings] == [f"{stack}: {path}"]
    assert fragment in loaded.findings[0].message


def test_a_stack_file_with_a_bad_definition_reports_definition_paths(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"slurmstack:cluster": with_("pools.0.count", -1)})
    loaded = load_file(stack)
    assert [f.path for f in loaded.findings] == ["pools[0].count"]

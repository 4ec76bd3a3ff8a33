"""The contract between the control plane and the nodes: its layouts read back what was
written, its name scheme, and the first-boot script's copy of it."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmstack import contract
from slurmstack.render import bootstrap_env, bootstrap_source, node_config, roles
from support.examples import EXAMPLE_IDS, example_plan


def test_node_name_is_pool_and_low_16_bits_of_the_address() -> None:
    assert contract.node_name("train-", "10.42.7.19") == f"train-{7 * 256 + 19}"
    assert contract.node_name("train-", "10.43.255.255") == "train-65535"
    assert contract.is_node_name_of("train-65535", "train-")
    assert not contract.is_node_name_of("train-65536", "train-")
    assert not contract.is_node_name_of("training-1", "train-")
    assert contract.node_name_pattern("train") == "train-[0-65535]"


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_node_json_reads_back_what_render_wrote(example: str) -> None:
    plan = example_plan(example)
    for role in roles(plan):
        written = node_config(plan, None if role == contract.HEAD_ROLE else plan.pool(role))
        text = contract.dump_document(written)
        assert contract.load_document(contract.NodeConfig, text) == written
        assert contract.dump_document(contract.load_document(contract.NodeConfig, text)) == text


def test_bootstrap_env_reads_back_what_render_wrote() -> None:
    env = bootstrap_env(example_plan("p5-training"), "train")
    assert contract.read_bootstrap_env(contract.bootstrap_env_text(env)) == env
    with pytest.raises(KeyError, match="SLURMSTACK_REGION"):
        contract.read_bootstrap_env("SLURMSTACK_CLUSTER=x\n")


def test_node_env_writes_only_what_it_knows() -> None:
    env = contract.NodeEnv(head_address="10.42.0.10", node_name="train-1811")
    assert env.text() == "SLURMSTACK_HEAD_ADDRESS=10.42.0.10\nSLURMSTACK_NODE_NAME=train-1811\n"
    assert contract.read_node_env(env.text()) == env
    assert contract.env_ref("head_address") == "${SLURMSTACK_HEAD_ADDRESS}"
    with pytest.raises(KeyError):
        contract.env_ref("head_adress")


def test_store_keys_name_their_content() -> None:
    key = contract.store_key(b"slurm.conf")
    assert key.startswith(contract.CONFIG_PREFIX)
    assert contract.matches_key(b"slurm.conf", key) and not contract.matches_key(b"x", key)


def test_the_first_boot_script_carries_its_own_copy_of_the_contract(monkeypatch) -> None:
    """The user data's bootstrap runs without slurmstack: the names it takes from the contract
    are defined in it, equal to the contract's, and its readers read what render writes."""
    module = types.ModuleType("user_data_bootstrap")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look it up
    exec(compile(bootstrap_source(), "slurmstack-bootstrap", "exec"), module.__dict__)
    namespace = module.__dict__
    for name in ("AGENT_PATH", "AGENT_LIB_DIR", "BOOTSTRAP_DONE", "BOOTSTRAP_FAILED"):
        assert namespace[name] == getattr(contract, name)
    # The image contract's check reads the items as the contract writes them.
    assert namespace["COMMAND_DIRS"] == contract.COMMAND_DIRS
    copied = namespace["ImageItem"]
    assert {i.name: i.value for i in copied} == {i.name: i.value for i in contract.ImageItem}  # type: ignore[attr-defined]
    env = bootstrap_env(example_plan("p5-training"), "train")
    read = namespace["read_bootstrap_env"](contract.bootstrap_env_text(env))  # type: ignore[operator]
    assert (read.region, read.role, read.manifest_parameter) == (
        env.region,
        env.role,
        env.manifest_parameter,
    )


def _defined_names(module: Path) -> list[str]:
    """The public names a contract module defines at its top level."""
    names = []
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_the_contract_has_one_door_and_every_name_passes_through_it() -> None:
    """Each module's ``__all__`` is exactly what it defines, no name is defined twice, the door's
    ``__all__`` is their union, sorted, and the package's namespace holds nothing public besides
    (httpx's test)."""
    defined: list[str] = []
    for module in sorted(Path(contract.__file__).parent.glob("*.py")):
        if module.name == "__init__.py":
            continue
        names = _defined_names(module)
        assert sorted(vars(contract)[module.stem].__all__) == sorted(names), module.name
        defined += names
    assert len(defined) == len(set(defined)), "a name is defined in two contract modules"
    assert contract.__all__ == sorted(defined)
    public = {
        name
        for name, value in vars(contract).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(contract.__all__)


def test_every_contract_module_is_small() -> None:
    for module in Path(contract.__file__).parent.glob("*.py"):
        assert len(module.read_text().splitlines()) < 300, module.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_document_reads_back_what_was_written(data: st.DataObject) -> None:
    """The one codec (dump_document, load_document) on any value of each document's types,
    not only the examples' (hypothesis builds them from the dataclasses' annotations)."""
    for kind in (contract.NodeConfig, contract.AccountingConfig, contract.Acceptance):
        record = data.draw(st.from_type(kind), label=kind.__name__)
        text = contract.dump_document(record)
        loaded = contract.load_document(kind, text)
        assert contract.dump_document(loaded) == text
        if "NaN" not in text:  # a NaN price is not equal to itself; its text round-trips
            assert loaded == record


def test_a_field_at_its_default_is_left_out_and_read_back() -> None:
    pool = contract.PoolRef("gpu", "gpu-", "gpu")
    text = contract.dump_document(pool)
    assert json.loads(text) == {
        "generated_by": "slurmstack",
        "name": "gpu",
        "node_name_prefix": "gpu-",
        "feature": "gpu",
    }
    assert contract.load_document(contract.PoolRef, text) == pool
    with pytest.raises(KeyError, match="feature"):
        contract.load_document(contract.PoolRef, '{"name": "gpu", "node_name_prefix": "gpu-"}')

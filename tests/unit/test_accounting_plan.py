"""slurm.accounting -> what the head node receives: slurm.conf's accounting keys, slurmdbd.conf
(never with a password), MariaDB's configuration, the cloud-init steps, accounting.json (the
contract's AccountingConfig), and what the head's image must hold for it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from slurmstack import contract as c
from slurmstack.checks.slurm import is_accounting_key
from slurmstack.contract import HEAD_ROLE
from slurmstack.plan import (
    accounting_plan,
    buffer_pool_mib,
    build_plan,
    head_packages,
    image_contract,
    image_of,
    image_plans,
    role_image_contract,
)
from slurmstack.render import (
    accounting_config,
    head_files,
    slurm_conf,
    slurm_conf_keys,
    user_data,
)
from slurmstack.rules import accounting as rules
from slurmstack.validate import validate_object
from support.examples import EXAMPLE_IDS, REPO, example_plan


def plan_with(accounting: dict[str, Any], **top: Any):  # type: ignore[no-untyped-def]
    data = yaml.safe_load((REPO / "examples" / "g6e-inference-spot.yaml").read_text())
    data["slurm"]["accounting"] = accounting
    data.update(top)
    result = validate_object(data, source="test")
    assert result.spec is not None, [f.line() for f in result.findings]
    return build_plan(result.spec)


def conf_lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and line[0] != "#")


def test_on_by_default_with_a_local_database() -> None:
    plan = plan_with({})
    conf = conf_lines(slurm_conf(plan))
    assert conf["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert conf["AccountingStorageHost"] == f"{plan.name}-head"
    assert conf["AccountingStoragePort"] == "6819"
    assert conf["AccountingStorageTRES"] == "gres/gpu,gres/gpu:l4,gres/gpu:l40s"
    assert conf["JobAcctGatherType"] == "jobacct_gather/cgroup"
    # No accounts: no enforcement and Slurm's own priority plugin.
    assert "AccountingStorageEnforce" not in conf and "PriorityType" not in conf
    files = head_files(plan)
    dbd = conf_lines(files[c.SLURMDBD_CONF_RENDERED_PATH])
    assert dbd["StorageType"] == "accounting_storage/mysql"
    assert dbd["StorageHost"] == "localhost" and dbd["StorageLoc"] == "slurm_acct_db"
    assert dbd["DbdPort"] == "6819" and dbd["SlurmUser"] == "slurm"
    assert "StoragePass" not in dbd  # the agent adds it on the head node
    cnf = files[c.MARIADB_CONF_PATH]
    assert f"datadir = {c.MARIADB_DATA_DIR}\n" in cnf and "skip-networking\n" in cnf
    # m7a.xlarge: 16 GiB, an eighth of it for InnoDB's buffer pool.
    assert plan.head.instance_type == "m7a.xlarge"
    assert "innodb_buffer_pool_size = 2048M\n" in cnf
    assert c.MARIADB_DATA_DIR.startswith("/var/spool/slurmctld/")  # the state volume
    config = json.loads(files[c.ACCOUNTING_CONFIG_PATH])
    assert config["database"]["password_secret"] == f"slurmstack/{plan.name}/accounting-db-password"
    # Slurm's default port is the document's default: the file leaves it out.
    assert "slurmdbd_port" not in config and c.SLURMDBD_PORT == 6819
    loaded = c.load_document(c.AccountingConfig, files[c.ACCOUNTING_CONFIG_PATH])
    assert loaded.slurmdbd_port == c.SLURMDBD_PORT
    head = user_data(plan, "head")
    db_step = head.index("slurmstack-node, accounting-db]")
    assert head.index("slurmstack-node, state-volume]") < db_step
    assert db_step < head.index("enable, --now, slurmctld.service]")
    assert head.index("enable, --now, slurmctld.service]") < head.index(
        "slurmstack-node, accounting-apply]"
    )


def test_accounts_turn_on_enforcement_and_fair_share() -> None:
    plan = plan_with(
        {
            "accounts": [{"name": "ml", "users": ["alice"]}],
            "qos": [{"name": "high", "priority": 10}],
            "fairshare_weight": 5000,
        }
    )
    conf = conf_lines(slurm_conf(plan))
    assert conf["AccountingStorageEnforce"] == "associations,limits,qos,safe"
    assert conf["PriorityType"] == "priority/multifactor"
    assert conf["PriorityWeightFairshare"] == "5000"
    assert conf["PriorityWeightQOS"] == "1000"
    no_enforce = plan_with({"accounts": [{"name": "ml"}], "enforce": False})
    assert "AccountingStorageEnforce" not in conf_lines(slurm_conf(no_enforce))


def test_every_key_the_accounting_block_writes_is_refused_in_settings() -> None:
    plan = plan_with({"accounts": [{"name": "ml"}], "qos": [{"name": "high"}]})
    keys = [k for k in slurm_conf_keys(slurm_conf(plan)) if "ccounting" in k or "Priority" in k]
    keys += ["JobAcctGatherType"]
    assert len(keys) >= 8
    assert all(is_accounting_key(k) for k in keys)


def test_turned_off_nothing_of_it_is_rendered() -> None:
    plan = plan_with({"enabled": False})
    assert accounting_plan(plan) is None
    text = slurm_conf(plan)
    assert "Accounting" not in text and "JobAcctGather" not in text
    files = head_files(plan)
    assert c.SLURMDBD_CONF_RENDERED_PATH not in files and c.MARIADB_CONF_PATH not in files
    assert json.loads(files[c.ACCOUNTING_CONFIG_PATH])["enabled"] is False
    assert "accounting-" not in user_data(plan, "head")


def test_an_external_database() -> None:
    plan = plan_with(
        {
            "database": {
                "type": "external",
                "host": "db.example.internal",
                "port": 3307,
                "name": "acct",
                "user": "slurmdbd",
                "password_secret": "db/slurm",
            }
        }
    )
    files = head_files(plan)
    dbd = conf_lines(files[c.SLURMDBD_CONF_RENDERED_PATH])
    assert (dbd["StorageHost"], dbd["StoragePort"]) == ("db.example.internal", "3307")
    assert (dbd["StorageLoc"], dbd["StorageUser"]) == ("acct", "slurmdbd")
    assert c.MARIADB_CONF_PATH not in files and c.MARIADB_DROPIN_PATH not in files
    assert "mariadb" not in files[c.SLURMDBD_DROPIN_PATH]
    config = json.loads(files[c.ACCOUNTING_CONFIG_PATH])
    assert config["database"]["password_secret"] == "db/slurm"
    assert config["database"]["type"] == "external"


def test_rds_leaves_the_host_to_its_deploy_parameter() -> None:
    plan = plan_with({"database": {"type": "rds"}})
    files = head_files(plan)
    assert "StorageHost" not in conf_lines(files[c.SLURMDBD_CONF_RENDERED_PATH])
    config = json.loads(files[c.ACCOUNTING_CONFIG_PATH])
    # The agent waits for that parameter: the rendered comment names it.
    assert config["database"]["host"] is None
    parameter = plan.parameter(c.DeployParameter.ACCOUNTING_DB_HOST)
    assert parameter == f"/slurmstack/{plan.name}/accounting/db-host"
    assert f"the deploy parameter {parameter}" in files[c.SLURMDBD_CONF_RENDERED_PATH]


def test_purge_after_months() -> None:
    plan = plan_with({"keep_job_records_months": 12})
    dbd = conf_lines(head_files(plan)[c.SLURMDBD_CONF_RENDERED_PATH])
    assert dbd["PurgeJobAfter"] == "12months" and dbd["PurgeStepAfter"] == "12months"


def test_accounting_json_resolves_inheritance_and_default_accounts() -> None:
    plan = plan_with(
        {
            "accounts": [
                {"name": "child", "parent": "team", "users": ["bob", "alice"]},
                {"name": "team", "qos": ["high", "normal"], "users": ["alice"]},
                {"name": "solo", "users": ["carol"], "qos": ["high"], "default_qos": "high"},
            ],
            "qos": [{"name": "high", "max_tres_per_user": {"gres/gpu": 8}}],
        }
    )
    config = json.loads(head_files(plan)[c.ACCOUNTING_CONFIG_PATH])
    accounts = {a["name"]: a for a in config["accounts"]}
    # Parents before children, whatever the definition's order.
    assert [a["name"] for a in config["accounts"]] == ["team", "solo", "child"]
    assert accounts["child"]["qos"] == ["high", "normal"]  # inherited from team
    assert accounts["child"]["default_qos"] == "high"  # team's first
    assert accounts["solo"]["default_qos"] == "high"
    users = {u["name"]: u for u in config["users"]}
    # The default account is the first account, in the definition's order, naming the user.
    assert users["alice"] == {
        "name": "alice",
        "default_account": "child",
        "accounts": ["child", "team"],
    }
    assert users["carol"]["default_account"] == "solo"
    assert config["qos"][0]["max_tres_per_user"] == {"gres/gpu": 8}


@pytest.mark.parametrize(
    ("memory_mib", "pool_mib"),
    [(8192, 1024), (65536, 4096), (2048, 256), (512, 128), (1 << 20, 4096)],
)
def test_innodb_buffer_pool(memory_mib: int, pool_mib: int) -> None:
    assert buffer_pool_mib(memory_mib) == pool_mib


def test_prices_come_from_the_definition_else_the_catalog() -> None:
    plan = plan_with({}, cost={"instance_hourly_usd": {"g6e.12xlarge": 8.0}})
    prices = {p.name: p for p in accounting_plan(plan).prices}  # type: ignore[union-attr]
    assert prices["l40s"].usd_per_hour == 8.0 and prices["l40s"].gpus == 4
    assert prices["l40s"].price_source == "definition: cost.instance_hourly_usd"
    catalog = prices["l4"]
    assert catalog.usd_per_hour == plan.pool("l4").facts.price.usd_per_hour  # type: ignore[union-attr]
    assert catalog.price_source.startswith("catalog (")


def test_the_head_image_bakes_accounting_and_the_head_checks_what_its_definition_uses() -> None:
    """Every image that may boot the head bakes slurmdbd and MariaDB whatever accounting is (so
    changing it builds no new image); the head's boot checks slurmdbd with accounting on, and
    MariaDB's commands only for the local database."""
    local, rds, off = (
        plan_with({}),
        plan_with({"database": {"type": "rds"}}),
        plan_with({"enabled": False}),
    )
    assert head_packages(local) == ("slurmdbd", "mariadb-server")
    assert head_packages(rds) == ("slurmdbd",)
    assert head_packages(off) == ()
    packages = set()
    for plan in (local, rds, off):
        image = image_of(plan, HEAD_ROLE)
        assert image is not None and set(head_packages(local)) <= set(image.packages)
        # The image's test phase checks them (the boot's own check, the image's full list).
        assert set(c.IMAGE_ACCOUNTING_ITEMS + c.IMAGE_LOCAL_DATABASE_ITEMS) <= set(
            image_contract(image)
        )
        packages.add(image.packages)
    assert len(packages) == 1
    wanted = [set(role_image_contract(p, HEAD_ROLE)) for p in (local, rds, off)]
    assert {"cmd:slurmdbd", "cmd:sacctmgr", "cmd:mariadbd", "cmd:mariadb-install-db"} <= wanted[0]
    assert "cmd:slurmdbd" in wanted[1] and "cmd:mariadbd" not in wanted[1]
    assert not wanted[2] & set(c.IMAGE_ACCOUNTING_ITEMS + c.IMAGE_LOCAL_DATABASE_ITEMS)
    # A worker's boot checks none of it.
    for pool in local.pools:
        assert not set(role_image_contract(local, pool.name)) & set(c.IMAGE_ACCOUNTING_ITEMS)
    # The head's cloud-init checks them before anything runs, and installs nothing.
    head = yaml.safe_load(user_data(local, HEAD_ROLE))
    check = next(step for step in head["runcmd"] if isinstance(step, list) and "check" in step)
    assert "cmd:mariadbd" in check and "cmd:slurmdbd" in check
    assert "packages" not in head and not any("apt" in str(step) for step in head["runcmd"])


def test_accelerated_images_the_head_does_not_boot_carry_no_accounting() -> None:
    plan = example_plan("p5-training")
    for image in image_plans(plan):
        carries = "mariadb-server" in image.packages
        assert carries == (image.kind.value == "cpu" or image.serves_head), image.key


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_accounting_json_reads_back_what_render_wrote(example: str) -> None:
    plan = example_plan(example)
    written = accounting_config(plan)
    text = c.dump_document(written)
    assert text == head_files(plan)[c.ACCOUNTING_CONFIG_PATH]
    assert c.load_document(c.AccountingConfig, text) == written
    off = accounting_config(plan_with({"enabled": False}))
    assert c.load_document(c.AccountingConfig, c.dump_document(off)) == off


def test_rds_subnets_stay_clear_of_the_compute_and_public_subnets() -> None:
    import ipaddress

    vpc = ipaddress.IPv4Network("10.1.0.0/24")
    taken = [ipaddress.IPv4Network("10.1.0.0/25"), ipaddress.IPv4Network("10.1.0.192/26")]
    zones = ["us-east-1a", "us-east-1b"]
    got = rules.rds_subnets(vpc, taken, "us-east-1b", zones)
    assert got == (
        (ipaddress.IPv4Network("10.1.0.128/28"), "us-east-1b"),
        (ipaddress.IPv4Network("10.1.0.144/28"), "us-east-1a"),
    )
    assert rules.rds_subnets(vpc, [vpc], "us-east-1a", zones) == ()  # no room
    assert rules.rds_subnets(vpc, taken, "us-east-1a", ["us-east-1a"]) == ()  # one zone

"""slurm.accounting -> what the head node receives: slurm.conf's accounting keys, slurmdbd.conf
(never with a password), MariaDB's configuration, the cloud-init steps and accounting.json."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from helpers_examples import REPO
from slurmstack import accounting as acct
from slurmstack.checks.slurm import is_accounting_key
from slurmstack.plan import build_plan
from slurmstack.render import head_files, slurm_conf, slurm_conf_keys, user_data
from slurmstack.validate import validate_object


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
    dbd = conf_lines(files[acct.SLURMDBD_CONF_RENDERED_PATH])
    assert dbd["StorageType"] == "accounting_storage/mysql"
    assert dbd["StorageHost"] == "localhost" and dbd["StorageLoc"] == "slurm_acct_db"
    assert dbd["DbdPort"] == "6819" and dbd["SlurmUser"] == "slurm"
    assert "StoragePass" not in dbd  # the agent adds it on the head node
    cnf = files[acct.MARIADB_CONF_PATH]
    assert f"datadir = {acct.MARIADB_DATA_DIR}\n" in cnf and "skip-networking\n" in cnf
    # m7a.xlarge: 16 GiB, an eighth of it for InnoDB's buffer pool.
    assert plan.head.instance_type == "m7a.xlarge"
    assert "innodb_buffer_pool_size = 2048M\n" in cnf
    assert acct.MARIADB_DATA_DIR.startswith("/var/spool/slurmctld/")  # the state volume
    config = json.loads(files[acct.ACCOUNTING_CONFIG_PATH])
    assert config["database"]["password_secret"] == f"slurmstack/{plan.name}/accounting-db-password"
    assert config["database"]["data_dir"] == acct.MARIADB_DATA_DIR
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
    assert acct.accounting_plan(plan) is None
    text = slurm_conf(plan)
    assert "Accounting" not in text and "JobAcctGather" not in text
    files = head_files(plan)
    assert acct.SLURMDBD_CONF_RENDERED_PATH not in files and acct.MARIADB_CONF_PATH not in files
    assert json.loads(files[acct.ACCOUNTING_CONFIG_PATH])["enabled"] is False
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
    dbd = conf_lines(files[acct.SLURMDBD_CONF_RENDERED_PATH])
    assert (dbd["StorageHost"], dbd["StoragePort"]) == ("db.example.internal", "3307")
    assert (dbd["StorageLoc"], dbd["StorageUser"]) == ("acct", "slurmdbd")
    assert acct.MARIADB_CONF_PATH not in files and acct.MARIADB_DROPIN_PATH not in files
    assert "mariadb" not in files[acct.SLURMDBD_DROPIN_PATH]
    config = json.loads(files[acct.ACCOUNTING_CONFIG_PATH])
    assert config["database"]["password_secret"] == "db/slurm"
    assert config["database"]["data_dir"] is None


def test_rds_leaves_the_host_to_its_deploy_parameter() -> None:
    plan = plan_with({"database": {"type": "rds"}})
    files = head_files(plan)
    assert "StorageHost" not in conf_lines(files[acct.SLURMDBD_CONF_RENDERED_PATH])
    config = json.loads(files[acct.ACCOUNTING_CONFIG_PATH])
    assert config["database"]["host"] is None
    assert config["database"]["host_parameter"] == acct.DB_HOST_PARAMETER


def test_purge_after_months() -> None:
    plan = plan_with({"keep_job_records_months": 12})
    dbd = conf_lines(head_files(plan)[acct.SLURMDBD_CONF_RENDERED_PATH])
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
    config = json.loads(head_files(plan)[acct.ACCOUNTING_CONFIG_PATH])
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
    assert acct.buffer_pool_mib(memory_mib) == pool_mib


def test_prices_come_from_the_definition_else_the_catalog() -> None:
    plan = plan_with({}, cost={"instance_hourly_usd": {"g6e.12xlarge": 8.0}})
    prices = {p.pool: p for p in acct.accounting_plan(plan).prices}  # type: ignore[union-attr]
    assert prices["l40s"].usd_per_hour == 8.0 and prices["l40s"].usd_per_gpu_hour == 2.0
    assert prices["l40s"].source == "definition: cost.instance_hourly_usd"
    catalog = prices["l4"]
    assert catalog.usd_per_hour == plan.pool("l4").facts.price.usd_per_hour  # type: ignore[union-attr]
    assert catalog.source.startswith("catalog (")


def test_head_packages_are_data_for_the_image() -> None:
    assert acct.HEAD_PACKAGES == ("slurmdbd", "mariadb-server")
    assert acct.head_packages(plan_with({})) == acct.HEAD_PACKAGES
    assert acct.head_packages(plan_with({"database": {"type": "rds"}})) == ("slurmdbd",)
    assert acct.head_packages(plan_with({"enabled": False})) == ()
    # Nothing installs them at boot: the head image carries them.
    assert "mariadb" not in user_data(plan_with({}), "head").split("packages,", 1)[1].split("]")[0]


def test_rds_subnets_stay_clear_of_the_compute_and_public_subnets() -> None:
    import ipaddress

    vpc = ipaddress.IPv4Network("10.1.0.0/24")
    taken = [ipaddress.IPv4Network("10.1.0.0/25"), ipaddress.IPv4Network("10.1.0.192/26")]
    zones = ["us-east-1a", "us-east-1b"]
    got = acct.rds_subnets(vpc, taken, "us-east-1b", zones)
    assert got == (
        (ipaddress.IPv4Network("10.1.0.128/28"), "us-east-1b"),
        (ipaddress.IPv4Network("10.1.0.144/28"), "us-east-1a"),
    )
    assert acct.rds_subnets(vpc, [vpc], "us-east-1a", zones) == ()  # no room
    assert acct.rds_subnets(vpc, taken, "us-east-1a", ["us-east-1a"]) == ()  # one zone

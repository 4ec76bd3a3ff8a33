"""decide() (slurmstack/node/association_plan.py) as a table: what slurmdbd holds, what the
definition wants (accounting.json) and what slurmstack created before -> sacctmgr commands."""

from __future__ import annotations

from dataclasses import replace

from slurmstack.contract import (
    AccountingAccount,
    AccountingConfig,
    AccountingDatabase,
    AccountingQos,
    AccountingUser,
    DatabaseType,
)
from slurmstack.node.accounting.decide import decide
from slurmstack.node.accounting.sacctmgr import Observed, parse_associations, parse_qos

DESIRED = AccountingConfig(
    cluster="c",
    enabled=True,
    database=AccountingDatabase(DatabaseType.LOCAL, "localhost", 3306, "db", "slurm", "secret"),
    qos=(
        AccountingQos(
            name="big",
            description="Big",
            priority=100,
            max_wall_minutes=None,
            max_jobs_per_user=None,
            max_tres_per_user={"gres/gpu": 4},
            max_tres_per_job={},
            grp_tres={},
        ),
    ),
    accounts=(
        AccountingAccount(
            name="a",
            description="A",
            parent="root",
            fairshare=2,
            qos=("big", "normal"),
            default_qos="big",
            grp_tres={},
        ),
        AccountingAccount(
            name="b",
            description="b",
            parent="a",
            fairshare=1,
            qos=("big", "normal"),
            default_qos="big",
            grp_tres={"gres/gpu": 8},
        ),
    ),
    users=(AccountingUser(name="u", default_account="b", accounts=("b", "a")),),
)


def observed(assoc: str, qos: str = "", users: str = "", descriptions: str = "") -> Observed:
    out = Observed(qos=parse_qos(qos))
    parse_associations(assoc, out)
    out.default_accounts = dict(line.split("|") for line in users.splitlines() if line)
    out.descriptions = dict(line.split("|") for line in descriptions.splitlines() if line)
    return out


IN_SYNC = observed(
    "root||||normal||\na||root|2|big,normal|big|\nb||a|1|big,normal|big|gres/gpu=8\n"
    "b|u||1|big,normal|big|\na|u||1|big,normal|big|\n",
    "normal|Normal QOS default|0|||||\nbig|big|100|||gres/gpu=4||\n",
    "u|b\n",
    "a|a\nb|b\n",
)


def test_a_new_cluster_gets_everything_in_order() -> None:
    decision = decide(DESIRED, observed("root||||normal||\n"), {})
    assert [a.what for a in decision.actions] == [
        "add qos big",
        "add account a",
        "add account b",
        "add user u to b",
        "add user u to a",
    ]
    add_b = decision.actions[2].args
    assert add_b[:3] == ("add", "account", "b") and "Parent=a" in add_b
    assert "GrpTRES=gres/gpu=8" in add_b and "Organization=slurmstack" in add_b
    assert decision.actions[3].args[-1] == "DefaultAccount=b"  # a new user: default first
    assert "DefaultAccount=b" not in decision.actions[4].args
    assert {a.own for a in decision.actions} == {
        ("qos", "big"),
        ("accounts", "a"),
        ("accounts", "b"),
        ("members", "u@b"),
        ("members", "u@a"),
    }


def test_in_sync_nothing_to_do_and_settings_are_brought_back() -> None:
    assert decide(DESIRED, IN_SYNC, {}).actions == []
    drifted = observed(
        "a||root|5|normal||\nb||a|1|big,normal|big|gres/gpu=8,cpu=10\nb|u||1|||\na|u||1|||\n",
        "big|big|50|01:00:00||gres/gpu=4,cpu=8||\n",
        "u|a\n",
        "a|old\nb|b\n",
    )
    args = {a.what: a.args for a in decide(DESIRED, drifted, {}).actions}
    assert args["modify qos big"][-3:] == (
        "Priority=100",
        "MaxWall=-1",
        "MaxTRESPerUser=cpu=-1,gres/gpu=4",
    )
    assert args["modify account a"][-4:] == (
        "set",
        "Fairshare=2",
        "QOS=big,normal",
        "DefaultQOS=big",
    )
    assert args["modify account b"][-1] == "GrpTRES=cpu=-1,gres/gpu=8"
    assert args["describe account a"][-1] == "Description=A"
    assert args["default account of u: b"][-1] == "DefaultAccount=b"


def test_only_what_slurmstack_created_is_removed() -> None:
    desired = replace(
        DESIRED,
        accounts=DESIRED.accounts[:1],
        qos=(),
        users=(AccountingUser(name="u", default_account="a", accounts=("a",)),),
    )
    world = observed(
        "a||root|2|big,normal|big|\nb||a|1|big,normal|big|gres/gpu=8\nb|u||1|||\na|u||1|||\n"
        "ops||root|1|normal||\nops|eve||1|||\nb|bob||1|||\nc||root|1|normal||\nc|zed||1|||\n",
        "big|big|100||||||\nhand|hand|0||||||\n",
        "u|b\nbob|b\nzed|c\neve|ops\n",
        "a|a\n",
    )
    owned = {"qos": ["big"], "accounts": ["a", "b", "c"], "members": ["u@b", "u@a", "zed@c"]}
    decision = decide(desired, world, owned)
    done = [a.what for a in decision.actions]
    # u's default moves to a (the definition's) before u leaves b; zed leaves c before c goes.
    assert done == [
        "default account of u: a",
        "remove user u from b",
        "remove user zed from c",
        "remove account c",
        "remove qos big",
    ]
    # b holds bob, whom an operator added: kept. ops and hand were never slurmstack's.
    assert decision.kept == {
        "account b": "holds user bob, which slurmstack did not create or keeps"
    }
    assert not any("ops" in w or "hand" in w for w in done)

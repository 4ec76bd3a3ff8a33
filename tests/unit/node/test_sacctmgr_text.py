"""What sacctmgr prints (slurmstack/node/sacctmgr_text.py), read into plain values."""

from __future__ import annotations

from slurmstack.node.accounting.sacctmgr import (
    Observed,
    parse_associations,
    parse_pairs,
    parse_qos,
    parse_tres,
    parse_wall_minutes,
)


def test_sacctmgr_values_are_read() -> None:
    assert parse_tres("cpu=4,gres/gpu:h100=2,mem=1000M") == {
        "cpu": 4,
        "gres/gpu:h100": 2,
        "mem": 1000,
    }
    assert parse_tres("mem=2G,node=1") == {"mem": 2048, "node": 1}
    assert parse_wall_minutes("2-00:00:00") == 2880
    assert parse_wall_minutes("01:30:00") == 90 and parse_wall_minutes("") is None
    qos = parse_qos("normal|Normal QOS default|0|||||\nbig|big|100|02:00:00|4|gres/gpu=4||node=1\n")
    assert qos["big"] == {
        "description": "big",
        "priority": 100,
        "max_wall_minutes": 120,
        "max_jobs_per_user": 4,
        "max_tres_per_user": {"gres/gpu": 4},
        "max_tres_per_job": {},
        "grp_tres": {"node": 1},
    }


def test_associations_split_into_accounts_and_members_root_left_out() -> None:
    observed = Observed()
    parse_associations(
        "root||||normal||\nroot|root||1|normal||\nml||root|5|big,normal|big|gres/gpu=8\n"
        "ml|alice||1|big,normal|big|\n",
        observed,
    )
    assert observed.accounts == {
        "ml": {
            "parent": "root",
            "fairshare": 5,
            "qos": ["big", "normal"],
            "default_qos": "big",
            "grp_tres": {"gres/gpu": 8},
        }
    }
    assert observed.members == {("root", "root"), ("alice", "ml")}
    assert observed.users() == {"root", "alice"}
    assert parse_pairs("alice|ml\nbob|\n") == {"alice": "ml", "bob": ""}

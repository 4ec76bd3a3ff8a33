"""`slurmstack ssh-config`: the block OpenSSH reads, and the ProxyCommand it runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurmstack.cli import app
from slurmstack.ssh_config import OutputsError, ssh_config

OUTPUTS = {
    "cluster": "team",
    "region": "us-east-1",
    "users": ["alice", "bob"],
    "login_pools": {
        "login": {"asg_name": "team-login-login", "host_key_alias": "team-login"},
        "big": {
            "asg_name": "team-login-big",
            "host_key_alias": "team-big",
            "load_balancer_dns": "team-ssh-big-0123.elb.us-east-1.example",
        },
    },
}
needs_ssh = pytest.mark.skipif(
    shutil.which("ssh") is None and os.environ.get("CI") != "true", reason="no OpenSSH client"
)


@needs_ssh
def test_openssh_reads_the_block_and_its_proxy_reaches_an_in_service_node(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(ssh_config(OUTPUTS, "alice", "~/.ssh/id_ed25519"))
    seen = subprocess.run(
        ["ssh", "-G", "-F", str(config), "team-login"], capture_output=True, text=True, check=True
    ).stdout
    options = dict(line.split(" ", 1) for line in seen.splitlines() if " " in line)
    assert options["user"] == "alice" and options["hostkeyalias"] == "team-login"
    assert options["identitiesonly"] == "yes"
    proxy = options["proxycommand"].replace("%p", "22")
    # The ProxyCommand as ssh runs it, with a stand-in aws CLI that records its arguments.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "aws.log"
    (bin_dir / "aws").write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> {log}\n'
        'case "$1" in autoscaling) echo i-0abc1234567890def;; esac\n'
    )
    (bin_dir / "aws").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["/bin/sh", "-c", proxy], env=env, check=True, timeout=30)
    calls = log.read_text().splitlines()
    assert "--auto-scaling-group-names team-login-login" in calls[0]
    assert "LifecycleState==`InService`" in calls[0]
    assert calls[1] == (
        "ssm start-session --region us-east-1 --target i-0abc1234567890def "
        "--document-name AWS-StartSSHSession --parameters portNumber=22"
    )
    direct = subprocess.run(
        ["ssh", "-G", "-F", str(config), "team-big-direct"], capture_output=True, text=True
    ).stdout
    assert "hostname team-ssh-big-0123.elb.us-east-1.example" in direct
    assert "hostkeyalias team-big" in direct


@pytest.mark.parametrize(
    ("outputs", "user", "fragment"),
    [
        ({"region": "us-east-1"}, "alice", "no 'cluster'"),
        ({"cluster": "c", "region": "r"}, "alice", "has no login pools"),
        (OUTPUTS, "carol", "'carol' is not a user of cluster team"),
    ],
)
def test_outputs_without_a_way_in_say_why(outputs: dict, user: str, fragment: str) -> None:
    with pytest.raises(OutputsError, match=fragment):
        ssh_config(outputs, user, "~/.ssh/id")


def test_the_command_reads_the_outputs_on_standard_input() -> None:
    result = CliRunner().invoke(app, ["ssh-config", "--user", "bob"], input=json.dumps(OUTPUTS))
    assert result.exit_code == 0, result.output
    assert "Host team-login\n" in result.output and "User bob" in result.output
    bad = CliRunner().invoke(app, ["ssh-config", "--user", "bob"], input="not json")
    assert bad.exit_code == 2 and "Traceback" not in bad.output

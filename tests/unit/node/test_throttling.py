"""Throttling is normal: which AWS errors mean "not now" (retried) and which "no"; every client
retries in botocore's standard mode with bounded attempts; a node's boot reads Parameter Store
once; a step AWS throttles is run again, and a node AWS keeps throttling is never marked
Unhealthy (its replacement would throttle the same way: a retry storm)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from slurmstack import contract
from slurmstack.contract import (
    AWS_MAX_ATTEMPTS,
    BOOTSTRAP_DONE,
    EXIT_RETRYABLE,
    GET_PARAMETERS_MAX,
    HEAD_ROLE,
    PARAMETERS_CACHE_PATH,
    POOL_PARAMETERS,
    DeployParameter,
    is_retryable,
    parameter_calls,
)
from slurmstack.node import bootstrap, cli
from slurmstack.node.boot import config_sync, mounts, params
from support.node import PLAN, Runner, asg_with_instance, make_node, publish_config


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Op",
    )


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (client_error("RequestLimitExceeded", 503), True),  # EC2
        (client_error("ThrottlingException"), True),  # Parameter Store
        (client_error("Throttling"), True),  # Auto Scaling
        (client_error("SlowDown", 503), True),  # S3
        (client_error("InvalidInstanceID.NotFound"), True),  # EC2, just after a launch
        (client_error("InternalError", 500), True),
        (EndpointConnectionError(endpoint_url="https://ec2"), True),
        (client_error("InsufficientInstanceCapacity"), False),  # EC2 says no: a reason
        (client_error("UnauthorizedOperation"), False),
        (client_error("ParameterNotFound"), False),
        (NoCredentialsError(), False),  # a role that is not there stays so
        (RuntimeError("boom"), False),
    ],
    ids=lambda v: getattr(v, "__class__", type(v)).__name__ if not isinstance(v, bool) else "",
)
def test_which_errors_mean_not_now(error: Exception, retryable: bool) -> None:
    assert is_retryable(error) is retryable


def test_every_client_retries_in_standard_mode_with_bounded_attempts(aws, tmp_path) -> None:
    node = make_node(tmp_path, aws, "train")
    for client in (node.aws.ec2(), node.aws.ssm(), node.aws.s3(), node.aws.autoscaling()):
        retries = client.meta.config.retries
        assert retries == {"mode": "standard", "total_max_attempts": AWS_MAX_ATTEMPTS}
    boot = bootstrap.client(aws, "ssm", "us-east-1").meta.config.retries
    assert boot == {"mode": "standard", "total_max_attempts": AWS_MAX_ATTEMPTS}


def count_calls(session: Any, service: str) -> list[str]:
    """The operations ``session``'s clients of ``service`` send from now on."""
    seen: list[str] = []
    session.events.register(
        f"before-call.{service}", lambda model, **_: seen.append(model.name), unique_id="count"
    )
    return seen


def test_a_nodes_boot_reads_parameter_store_once(aws, tmp_path: Path) -> None:
    """The first-boot script reads every deploy-time parameter in one GetParameters call; the
    agent's steps (sync-config, params, mounts, head-address) take theirs from that answer."""
    publish_config(aws, "train")
    ssm = aws.client("ssm")
    for key, value in {
        DeployParameter.HEAD_ADDRESS: "10.42.0.10",
        DeployParameter.EFS_ID: "fs-0123456789abcdef0",
        DeployParameter.LUSTRE_DNS: "fs-1.fsx.us-east-1.amazonaws.com",
        DeployParameter.LUSTRE_MOUNT_NAME: "abcdefgh",
    }.items():
        ssm.put_parameter(Name=PLAN.parameter(key), Value=value, Type="String")
    node = make_node(tmp_path, aws, "train")
    calls = count_calls(aws, "ssm")
    bootstrap.install(node.bootstrap_env(), aws, root=str(tmp_path), poll=0)
    config_sync.sync_config(node, poll=0)
    params.params(node, poll=0)
    mounts.storage_env(node, poll=0)
    params.head_address(node)
    assert calls == ["GetParameters"]
    cached = contract.read_deploy_values((tmp_path / PARAMETERS_CACHE_PATH.lstrip("/")).read_text())
    assert cached.values[DeployParameter.HEAD_ADDRESS] == "10.42.0.10"
    # Today's code asked once per value and step: nine calls (the count).


def test_a_value_missing_from_the_boots_answer_is_read_again(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    node = make_node(tmp_path, aws, "train")
    calls = count_calls(aws, "ssm")
    assert node.get_parameter(DeployParameter.HEAD_ADDRESS) is None  # not there yet
    aws.client("ssm").put_parameter(
        Name=PLAN.parameter(DeployParameter.HEAD_ADDRESS), Value="10.42.0.10", Type="String"
    )
    assert node.get_parameter(DeployParameter.HEAD_ADDRESS) == "10.42.0.10"
    assert node.get_parameter(DeployParameter.BUCKET) is not None  # in the same answer
    assert [c for c in calls if c != "PutParameter"] == ["GetParameters", "GetParameters"]


def test_after_the_boot_every_value_is_read_afresh(aws, tmp_path: Path) -> None:
    """A pushed configuration (a new manifest) or a replaced head (a new address) changes a
    parameter the boot's answer holds: once booted, the node reads it again."""
    publish_config(aws, "train")
    ssm = aws.client("ssm")
    name = PLAN.parameter(DeployParameter.HEAD_ADDRESS)
    ssm.put_parameter(Name=name, Value="10.42.0.10", Type="String")
    node = make_node(tmp_path, aws, "train")
    assert node.get_parameter(DeployParameter.HEAD_ADDRESS) == "10.42.0.10"
    ssm.put_parameter(Name=name, Value="10.42.0.99", Type="String", Overwrite=True)
    assert node.get_parameter(DeployParameter.HEAD_ADDRESS) == "10.42.0.10"  # booting: kept
    done = tmp_path / BOOTSTRAP_DONE.lstrip("/")
    done.parent.mkdir(parents=True, exist_ok=True)
    done.write_text("done")
    assert node.get_parameter(DeployParameter.HEAD_ADDRESS) == "10.42.0.99"


def test_the_heads_boot_reads_every_parameter_ten_names_a_call(aws, tmp_path: Path) -> None:
    """GetParameters takes at most ten names (moto enforces it as Parameter Store does): the
    head reads all of them in two calls, a pool node its own in one (it needs none of the
    head's: state volume, accounting database, alert topic, compute subnet)."""
    assert len(DeployParameter) > GET_PARAMETERS_MAX  # else this test proves nothing
    publish_config(aws, "head")
    ssm = aws.client("ssm")
    for key in DeployParameter:
        if key not in (DeployParameter.BUCKET, DeployParameter.CONFIG_MANIFEST):
            ssm.put_parameter(Name=PLAN.parameter(key), Value=f"v-{key}", Type="String")
    head = make_node(tmp_path / "head", aws, HEAD_ROLE)
    calls = count_calls(aws, "ssm")
    bootstrap.read_parameters(aws.client("ssm"), head.bootstrap_env(), str(tmp_path / "head"), 0, 0)
    assert (
        head.get_parameter(DeployParameter.ALERT_TOPIC_ARN)
        == f"v-{DeployParameter.ALERT_TOPIC_ARN}"
    )
    assert head.get_parameter(DeployParameter.COMPUTE_SUBNET_ID) is not None
    assert calls == ["GetParameters", "GetParameters"]
    worker = make_node(tmp_path / "train", aws, "train")
    calls.clear()
    values = bootstrap.read_parameters(
        aws.client("ssm"), worker.bootstrap_env(), str(tmp_path / "train"), 0, 0
    ).values
    assert calls == ["GetParameters"]
    assert set(values) == set(POOL_PARAMETERS)
    # A value outside a pool node's set, asked for, is read (with the set, in one call).
    assert worker.get_parameter(DeployParameter.EFS_ID) == f"v-{DeployParameter.EFS_ID}"
    assert worker.get_parameter(DeployParameter.ALERT_TOPIC_ARN) is not None
    assert calls == ["GetParameters", "GetParameters"]


def test_parameter_calls_hold_at_most_ten_names() -> None:
    for role, also in ((HEAD_ROLE, ""), ("train", ""), ("train", DeployParameter.ALERT_TOPIC_ARN)):
        calls = parameter_calls("/slurmstack/c", role, also)
        assert all(1 <= len(names) <= GET_PARAMETERS_MAX for names in calls)
        names = [n for call in calls for n in call]
        assert len(names) == len(set(names))
        assert len(calls) == (2 if role == HEAD_ROLE else 1)
        assert ("/slurmstack/c/" + also in names) if also else True


class Throttled:
    """A session whose clients answer every call with ``code`` (as after the client's own
    retries)."""

    def __init__(self, code: str = "ThrottlingException") -> None:
        self.code = code

    def client(self, *_args: Any, **_kwargs: Any) -> Any:
        outer = self

        class Client:
            def __getattr__(self, _name: str) -> Any:
                def call(**_kwargs: Any) -> Any:
                    raise client_error(outer.code)

                return call

        return Client()


def test_the_agent_exits_retryable_when_aws_throttles(tmp_path: Path) -> None:
    node = make_node(tmp_path, Throttled(), "train")
    (tmp_path / "etc/slurmstack/node.json").write_text(
        contract.dump_document(contract.NodeConfig(
            cluster=PLAN.name, region="us-east-1", role="train", parameter_prefix=PLAN.parameter_prefix,
            munge_secret="s", mounts=(),
        ))
    )  # fmt: skip
    assert cli.main(["sync-config"], ctx=node) == EXIT_RETRYABLE


def test_a_throttled_step_is_run_again_and_passes(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, instance)
    marker = tmp_path / "tries"
    # Throttled twice (exit status EXIT_RETRYABLE), then done.
    script = (
        f"import pathlib,sys; p=pathlib.Path({str(marker)!r}); n=len(p.read_text()) if p.exists()"
        f" else 0; p.write_text('x'*(n+1)); sys.exit({EXIT_RETRYABLE} if n < 2 else 0)"
    )
    waits: list[float] = []
    code = bootstrap.main(
        ["run", sys.executable, "-c", script], session=aws, root=str(root), sleep=waits.append
    )
    assert code == 0 and marker.read_text() == "xxx"
    assert waits == [bootstrap.RETRY_FIRST_SECONDS, 2 * bootstrap.RETRY_FIRST_SECONDS]
    assert not (root / bootstrap.BOOTSTRAP_FAILED.lstrip("/")).exists()


def test_a_node_aws_keeps_throttling_is_not_marked_unhealthy(aws, tmp_path: Path) -> None:
    instance = asg_with_instance(aws)
    root = boot_root(tmp_path, instance)
    waits: list[float] = []
    argv = ["run", sys.executable, "-c", f"import sys; sys.exit({EXIT_RETRYABLE})"]
    code = bootstrap.main(argv, session=aws, root=str(root), sleep=waits.append)
    assert code == 1
    assert sum(waits) >= bootstrap.STEP_RETRY_SECONDS and max(waits) == bootstrap.RETRY_MAX_SECONDS
    assert "AWS kept saying not now" in (root / bootstrap.BOOTSTRAP_FAILED.lstrip("/")).read_text()
    status = aws.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance])
    assert status["AutoScalingInstances"][0]["HealthStatus"].upper() == "HEALTHY"


def test_a_throttled_install_is_retried(aws, tmp_path: Path) -> None:
    publish_config(aws, "train")
    root = boot_root(tmp_path, "i-0123456789abcdef0")
    waits: list[float] = []
    real = bootstrap.install
    tries = []

    def flaky(*args: Any, **kwargs: Any) -> str:
        tries.append(1)
        if len(tries) == 1:
            raise client_error("SlowDown", 503)
        return real(*args, **kwargs)

    bootstrap.install = flaky  # type: ignore[assignment]
    try:
        assert bootstrap.main(["install"], session=aws, root=str(root), sleep=waits.append) == 0
    finally:
        bootstrap.install = real  # type: ignore[assignment]
    assert len(tries) == 2 and waits == [bootstrap.RETRY_FIRST_SECONDS]


def boot_root(tmp_path: Path, instance: str) -> Path:
    make_node(tmp_path, None, "train", run=Runner())
    instance_file = tmp_path / bootstrap.INSTANCE_ID_FILE.lstrip("/")
    instance_file.parent.mkdir(parents=True, exist_ok=True)
    instance_file.write_text(instance + "\n")
    return tmp_path

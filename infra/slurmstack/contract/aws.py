"""AWS's and Slurm's network facts: Slurm's ports, the instance metadata service, partitions and
ARNs; how every AWS client retries, and which AWS errors mean "not now" rather than "no"."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "CONSISTENCY_ERRORS",
    "EXIT_RETRYABLE",
    "IMDS_IPV4",
    "IMDS_IPV6",
    "PASSING_ERRORS",
    "SLURMCTLD_PORT",
    "SLURMDBD_PORT",
    "SLURMD_PORT",
    "SRUN_PORT_RANGE",
    "THROTTLING_ERRORS",
    "TRANSIENT_ERRORS",
    "aws_client_config",
    "aws_error_code",
    "instance_arn",
    "is_retryable",
    "partition",
]

# --- network ---------------------------------------------------------------------------

# Slurm's ports: slurm.conf uses them and the stack's security groups open exactly these.
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SRUN_PORT_RANGE = (60001, 63000)
# slurmdbd's (slurmdbd.conf DbdPort, slurm.conf AccountingStoragePort): Slurm's default. Only
# the head node talks to it (slurmctld, sacct and sacctmgr run there), so no group opens it.
SLURMDBD_PORT = 6819

# The instance metadata service (IPv6 only answers on Nitro instances that enable it).
IMDS_IPV4 = "169.254.169.254"
IMDS_IPV6 = "fd00:ec2::254"


def partition(region: str) -> str:
    """The AWS partition of a region (ARNs depend on it)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def instance_arn(region: str, account: str, instance_id: str) -> str:
    return f"arn:{partition(region)}:ec2:{region}:{account}:instance/{instance_id}"


# --- AWS's API: retries ---------------------------------------------------------------------

# Every AWS client of the agent and of the first-boot script, on the nodes and the head, retries
# as botocore's "standard" mode does (throttling and transient errors retried with exponential
# backoff and jitter, up to 20 s apart, within a retry quota per client:
# botocore/retries/standard.py), at most AWS_MAX_ATTEMPTS times per call: at a thousand nodes
# throttling is normal, and no call waits for ever.
AWS_RETRY_MODE = "standard"
AWS_MAX_ATTEMPTS = 8

# Error codes that mean "not now": each service's word for throttling (EC2's RequestLimitExceeded,
# S3's SlowDown, Parameter Store's ThrottlingException, ...; the codes botocore's standard mode
# treats as throttling), ...
THROTTLING_ERRORS = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "EC2ThrottledException",
        "TooManyRequestsException",
        "SlowDown",
        "BandwidthLimitExceeded",
        "ProvisionedThroughputExceededException",
        "PriorRequestNotComplete",
    }
)
# ... EC2's eventual consistency (an instance or fleet just created, not yet known to the
# endpoint that answers: EC2 API Reference, "Eventual consistency in the Amazon EC2 API") ...
CONSISTENCY_ERRORS = frozenset({"InvalidInstanceID.NotFound", "InvalidFleetId.NotFound"})
# ... and a service's passing fault.
TRANSIENT_ERRORS = frozenset(
    {"InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "RequestTimeout"}
)
# Exceptions without an AWS answer that pass: no connection (botocore's class names). Missing
# credentials are not among them: an instance without its role stays without it.
PASSING_ERRORS = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
    }
)
# The agent's exit status for a step that failed on such an error (sysexits.h EX_TEMPFAIL): the
# first-boot script runs the step again later and never marks the node unhealthy for it.
EXIT_RETRYABLE = 75


def aws_client_config() -> dict[str, Any]:
    """Keyword arguments of botocore.config.Config for every client."""
    return {"retries": {"mode": AWS_RETRY_MODE, "total_max_attempts": AWS_MAX_ATTEMPTS}}


def aws_error_code(exc: BaseException) -> str | None:
    """The error code of an AWS answer (botocore's ClientError), or None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        code = response["Error"].get("Code")
        return str(code) if code else None
    return None


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` says "not now" (throttled, not yet consistent, a passing fault, no
    connection) rather than "no" (denied, invalid, out of capacity, no credentials)."""
    code = aws_error_code(exc)
    if code is not None:
        return code in THROTTLING_ERRORS | CONSISTENCY_ERRORS | TRANSIENT_ERRORS
    return any(cls.__name__ in PASSING_ERRORS for cls in type(exc).__mro__)

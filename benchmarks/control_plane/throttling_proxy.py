"""A counting, throttling stand-in in front of moto: it sees every request the agent's boto3
clients send (botocore's before-send event, where moto answers too, so the clients' own retry
logic runs as it would against AWS), counts each attempt, and answers a chosen fraction of them
with the throttling error the service really returns, as the service returns it (status and
body); moto sees only the others (botocore runs every before-send handler, so the proxy takes
moto's place on its session and calls it itself: a throttled CreateFleet launches nothing).
It also gives EC2 Fleet a finite capacity per launch template, as EC2 would: an instant fleet
gets what is left, none short of its MinTargetCapacity, and EC2's error for the rest."""

from __future__ import annotations

import copy
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import AWSResponse

# What each service answers a throttled request (status, body), by the service's protocol:
# EC2's query protocol (RequestLimitExceeded, HTTP 503), Auto Scaling's query protocol
# (Throttling, 400), SSM's JSON protocol (ThrottlingException, 400) and S3's REST-XML (SlowDown,
# 503). Each code is one botocore's standard retry mode classifies as throttling.
THROTTLED: dict[str, tuple[int, bytes]] = {
    "ec2": (
        503,
        b"<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit "
        b"exceeded.</Message></Error></Errors><RequestID>bench</RequestID></Response>",
    ),
    "auto-scaling": (
        400,
        b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate "
        b"exceeded</Message></Error><RequestId>bench</RequestId></ErrorResponse>",
    ),
    "ssm": (400, b'{"__type":"ThrottlingException","message":"Rate exceeded"}'),
    "s3": (
        503,
        b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
        b"<RequestId>bench</RequestId></Error>",
    ),
}
# The EC2 calls that change something: what EC2's request and resource buckets are about.
MUTATING_EC2 = frozenset({"CreateFleet", "RunInstances", "TerminateInstances", "CreateTags"})
NO_CAPACITY = (
    "InsufficientInstanceCapacity",
    "We currently do not have sufficient capacity in the Availability Zone you requested.",
)


def index_moto_tags() -> None:
    """moto finds an EC2 resource's tags by scanning every tag of the Region (for each instance a
    filter looks at: minutes per DescribeInstances at 3,000 instances); the stand-in looks them
    up by resource id instead, with the same answer."""
    from moto.ec2.models.core import TaggedEC2Resource
    from moto.ec2.models.tags import EC2_PREFIX_TO_RESOURCE
    from moto.ec2.utils import get_prefix

    def get_tags(self: Any) -> list[dict[str, str]]:
        if not self.id:
            return []
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(self.id), "")
        tags = self.ec2_backend.tags.get(self.id, {})
        return [{"resource_id": self.id, "key": k, "value": v, "resource_type": kind}
                for k, v in tags.items()]  # fmt: skip

    TaggedEC2Resource.get_tags = get_tags  # type: ignore[method-assign]


class _Body:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class Proxy:
    """Installed on one boto3 Session (before its clients are made)."""

    def __init__(self, session: Any, backend: Any, throttle: float, seed: int = 24) -> None:
        """``backend``: moto's before-send handler (moto.core.models.botocore_stubber)."""
        self.backend = backend
        self.throttle = throttle
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        # moto answers one request at a time: its state is not safe for threads (two
        # CreateFleet at once: "generator already executing" in its subnet's address generator,
        # after launching part of the instances, which no answer then names: orphans that AWS
        # would not make). The resume program's requests still go out 8 at a time.
        self.backend_lock = threading.Lock()
        self.attempts: Counter[tuple[str, str]] = Counter()
        self.throttled: Counter[tuple[str, str]] = Counter()
        # Time spent in moto's answers (its XML serializer takes seconds for a page of a
        # thousand instances, which AWS does not), summed over threads: wall-clock, and the
        # CPU time of the threads that waited for them (moto answers in the caller's thread).
        self.backend_seconds = 0.0
        self.backend_cpu_seconds = 0.0
        self.backend_errors = 0
        self.capacity: dict[str, int] = {}  # launch template -> instances EC2 can still give
        events = session.events
        events.unregister("before-send", backend)
        events.register_first("before-send", self._send, unique_id="bench-proxy")
        events.register("provide-client-params.ec2.CreateFleet", self._fleet_params)
        events.register_first("before-call.ec2.CreateFleet", self._fleet_none)
        events.register("after-call.ec2.CreateFleet", self._fleet_errors)

    # --- counting and throttling --------------------------------------------------------

    def _send(self, request: Any, event_name: str, **kwargs: Any) -> AWSResponse | None:
        _, service, operation = event_name.split(".", 2)
        with self.lock:
            self.attempts[(service, operation)] += 1
            throttle = service in THROTTLED and self.random.random() < self.throttle
            if throttle:
                self.throttled[(service, operation)] += 1
        if not throttle:
            with self.backend_lock:
                started, cpu = time.monotonic(), time.thread_time()
                try:
                    answer: AWSResponse | None = self.backend(event_name, request, **kwargs)
                except Exception:  # moto's own failure, not the service's answer: counted
                    with self.lock:
                        self.backend_errors += 1
                    raise
            with self.lock:
                self.backend_seconds += time.monotonic() - started
                self.backend_cpu_seconds += time.thread_time() - cpu
            return answer
        status, body = THROTTLED[service]
        headers = {"x-amzn-RequestId": "bench"}
        if service == "ssm":
            headers["Content-Type"] = "application/x-amz-json-1.1"
        return AWSResponse(request.url, status, headers, _Body(body))

    def counts(self) -> dict[str, Any]:
        with self.lock:
            attempts, throttled = Counter(self.attempts), Counter(self.throttled)
        by_service: Counter[str] = Counter()
        for (service, _), n in attempts.items():
            by_service[service] += n
        return {
            "ec2_calls": by_service["ec2"],
            "mutating_ec2_calls": sum(
                n for (s, op), n in attempts.items() if s == "ec2" and op in MUTATING_EC2
            ),
            "ssm_calls": by_service["ssm"],
            "s3_calls": by_service["s3"],
            "autoscaling_calls": by_service["auto-scaling"],
            "throttled_calls": sum(throttled.values()),
            "standin_seconds": round(self.backend_seconds, 2),
            "standin_cpu_seconds": round(self.backend_cpu_seconds, 2),
            "standin_errors": self.backend_errors,
            "by_operation": {f"{s}:{op}": n for (s, op), n in sorted(attempts.items())},
        }

    def reset(self) -> None:
        with self.lock:
            self.attempts.clear()
            self.throttled.clear()
            self.backend_seconds = 0.0
            self.backend_cpu_seconds = 0.0
            self.backend_errors = 0

    # --- EC2 Fleet's capacity -------------------------------------------------------------

    def _fleet_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        template = params["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]
        name = template["LaunchTemplateName"]
        if name not in self.capacity:
            return None
        target = params["TargetCapacitySpecification"]["TotalTargetCapacity"]
        options_key = "SpotOptions" if "SpotOptions" in params else "OnDemandOptions"
        minimum = params.get(options_key, {}).get("MinTargetCapacity", 1)
        with self.lock:
            give = min(target, self.capacity[name])
            if give < minimum:
                give = 0
            self.capacity[name] -= give
        context["bench_short"] = target - give
        if give in (0, target):
            context["bench_none"] = give == 0
            return None
        asked = copy.deepcopy(params)
        asked["TargetCapacitySpecification"]["TotalTargetCapacity"] = give
        asked[options_key]["MinTargetCapacity"] = min(minimum, give)
        return asked

    def _fleet_none(self, context: dict[str, Any], **_: Any) -> Any:
        if not context.get("bench_none"):
            return None
        code, message = NO_CAPACITY
        parsed = {
            "FleetId": "fleet-00000000-0000-0000-0000-000000000000",
            "Instances": [],
            "Errors": [{"ErrorCode": code, "ErrorMessage": message}],
        }
        return AWSResponse("", 200, {}, _Body(b"")), parsed

    def _fleet_errors(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if context.get("bench_short") and not context.get("bench_none"):
            code, message = NO_CAPACITY
            parsed["Errors"] = [{"ErrorCode": code, "ErrorMessage": message}]

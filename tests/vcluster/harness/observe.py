"""What the observability scenarios use on a virtual cluster: the metrics timer (stand-in
"metrics-timer"), the head's Prometheus's HTTP API (reached from inside the head node: it
listens on the head's loopback only, as the rendered unit says), and an inbox for what the
head's alert relay sends to AWS (an EventBridge rule and a topic subscription, each delivering
to an SQS queue of moto's, which the test reads).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from slurmstack.contract import (
    ALERT_EVENT_DETAIL_TYPE,
    ALERT_EVENT_SOURCE,
    PROMETHEUS_PORT,
    alert_topic_name,
)

from .cluster import VirtualCluster
from .node import Node
from .standins import EFA_COUNTERS

METRICS_SERVICE = "slurmstack-metrics.service"
# The node's system python fetches a URL (no curl in the node contract).
FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())"


class MetricsTimer:
    """Stand-in "metrics-timer": slurmstack-metrics.service on every live node, one node after
    the other, every ``interval`` seconds, until stopped. ``nodes`` gives the nodes of the
    moment (elastic ones come and go)."""

    def __init__(self, nodes: Callable[[], list[Node]], interval: float) -> None:
        self.nodes = nodes
        self.interval = interval
        self.passes = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metrics-timer", daemon=True)

    def __enter__(self) -> MetricsTimer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                nodes = self.nodes()
            except RuntimeError:  # the node lists changed while being read: next pass
                nodes = []
            for node in nodes:
                if self._stop.is_set() or not node.alive:
                    continue
                try:
                    result = node.run("systemctl", "start", METRICS_SERVICE, check=False)
                except Exception as exc:  # the node died under it: the next pass
                    result = None
                    self.failures.append(f"{node.label()}: {exc}")
                if result is not None and result.returncode != 0:
                    self.failures.append(f"{node.label()}: {result.stderr[-300:]}")
            self.passes += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))


class Prometheus:
    """The head's Prometheus, through its HTTP API on the head's loopback."""

    def __init__(self, cluster: VirtualCluster) -> None:
        self.cluster = cluster

    def get(self, path: str, **params: str) -> Any:
        head = self.cluster.head
        assert head is not None
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        url = f"http://127.0.0.1:{PROMETHEUS_PORT}{path}{query}"
        out = head.run("/usr/bin/python3", "-c", FETCH, url, check=False)
        if out.returncode != 0:
            raise ConnectionError(f"GET {url}: {out.stderr.strip()[-300:]}")
        return out.stdout

    def api(self, path: str, **params: str) -> Any:
        body = json.loads(self.get(f"/api/v1/{path}", **params))
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        when = {} if at is None else {"time": f"{at:.3f}"}
        return list(self.api("query", query=expr, **when)["result"])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        data = self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                        step=f"{step:g}")  # fmt: skip
        return list(data["result"])

    def targets(self, job: str) -> dict[str, dict[str, Any]]:
        """The job's active targets by their node label: labels, health, last error."""
        active = self.api("targets", state="active")["activeTargets"]
        return {t["labels"]["node"]: t for t in active if t["labels"].get("job") == job}

    def own_metric(self, name: str) -> float:
        """A value of Prometheus's own /metrics."""
        lines = self.get("/metrics").splitlines()
        (value,) = [line.split()[1] for line in lines if line.startswith(name + " ")]
        return float(value)

    def ready(self) -> bool:
        try:
            self.api("status/runtimeinfo")
        except (ConnectionError, ValueError):
            return False
        return True


class AlertInbox:
    """What the alert relay delivers, read back from moto: EventBridge events matching
    ``{"source": ["slurmstack"]}`` and the alert topic's messages, each rule or subscription
    delivering to a queue of its own."""

    def __init__(self, cluster: VirtualCluster) -> None:
        aws = cluster.aws
        self.cluster = cluster.plan.name
        self.sqs = aws.client("sqs")
        events, sns = aws.client("events"), aws.client("sns")
        self.event_queue = self._queue(f"{self.cluster}-alert-events")
        self.topic_queue = self._queue(f"{self.cluster}-alert-topic")
        rule = f"{self.cluster}-alerts-to-sqs"
        events.put_rule(
            Name=rule,
            EventPattern=json.dumps({"source": [ALERT_EVENT_SOURCE]}),
            State="ENABLED",
        )
        events.put_targets(Rule=rule, Targets=[{"Id": "inbox", "Arn": self._arn(self.event_queue)}])
        topics = sns.list_topics()["Topics"]
        name = alert_topic_name(self.cluster)
        (topic,) = [t["TopicArn"] for t in topics if t["TopicArn"].endswith(f":{name}")]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=self._arn(self.topic_queue))
        self.events: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []

    def _queue(self, name: str) -> str:
        return str(self.sqs.create_queue(QueueName=name)["QueueUrl"])

    def _arn(self, url: str) -> str:
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    def _drain(self, url: str) -> list[dict[str, Any]]:
        out = []
        for _ in range(20):  # bounded: at most 200 messages a look
            got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            batch = got.get("Messages", [])
            if not batch:
                break
            for message in batch:
                out.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return out

    def collect(self) -> None:
        """Everything delivered since the last look, kept: events of this cluster's alerts
        (the account's default bus also carries other clusters'), the topic's notifications."""
        for event in self._drain(self.event_queue):
            detail = event.get("detail", {})
            if (
                event.get("detail-type") == ALERT_EVENT_DETAIL_TYPE
                and detail.get("cluster") == self.cluster
            ):
                self.events.append(event)
        self.messages += self._drain(self.topic_queue)

    def alert_events(self, alert: str, status: str) -> list[dict[str, Any]]:
        self.collect()
        return [
            e
            for e in self.events
            if e["detail"].get("alert") == alert and e["detail"].get("status") == status
        ]

    def topic_messages(self, alert: str, status: str) -> list[dict[str, Any]]:
        self.collect()
        wanted = f"{status}: {alert} "
        return [m for m in self.messages if wanted in m.get("Message", "")]


def efa_traffic(node: Node, megabytes: int) -> None:
    """Stand-in "efa": the node's EFA ports count ``megabytes`` more sent and received (and
    RDMA-read), as the driver counts a job's traffic."""
    more = megabytes * 1024 * 1024
    script = f'for f in "$@"; do read v < "$f"; echo $((v + {more})) > "$f"; done'
    moving = ("tx_bytes", "rx_bytes", "rdma_read_bytes")
    assert set(moving) <= set(EFA_COUNTERS)
    files = node.run("sh", "-c", "ls -d /sys/class/infiniband/*/ports/*/hw_counters").stdout.split()
    paths = [f"{d}/{c}" for d in files for c in moving]
    node.run("sh", "-c", script, "traffic", *paths)

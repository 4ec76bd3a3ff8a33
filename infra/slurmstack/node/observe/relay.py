"""`alert-relay` (the head, a service): Alertmanager's webhook receiver on loopback. Each alert
of a notification becomes one EventBridge event (source ALERT_EVENT_SOURCE, detail-type
ALERT_EVENT_DETAIL_TYPE, the detail below, documented in docs/observing.md) and the notification
one message on the alert topic (SNS: email and whatever else subscribes). The relay runs as root
because only root reaches the instance's credentials (the metadata firewall); Alertmanager,
which runs as its own user, never holds any. An answer other than 200 makes Alertmanager retry."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ...contract import (
    ALERT_EVENT_DETAIL_TYPE,
    ALERT_EVENT_SCHEMA_VERSION,
    ALERT_EVENT_SOURCE,
    ALERT_RELAY_PORT,
    DeployParameter,
)
from ..context import AgentError, Context, log

PATH = "/alerts"
EVENTS_PER_CALL = 10  # PutEvents takes at most 10 entries
SUBJECT_MAX = 100  # SNS: a subject of at most 100 characters
CONTEXT_LABELS = ("node", "pool", "hpc_job", "check", "remedy", "reservation", "mount")


def event_detail(cluster: str, alert: dict[str, Any]) -> dict[str, Any]:
    """One alert as an event's detail (schema version ALERT_EVENT_SCHEMA_VERSION)."""
    labels = {str(k): str(v) for k, v in alert.get("labels", {}).items()}
    annotations = alert.get("annotations", {})
    detail: dict[str, Any] = {
        "schema_version": ALERT_EVENT_SCHEMA_VERSION,
        "cluster": cluster,
        "alert": labels.get("alertname", ""),
        "status": alert.get("status", "firing"),
        "severity": labels.get("severity", "warning"),
        "summary": str(annotations.get("summary", "")),
        "starts_at": alert.get("startsAt", ""),
        "ends_at": alert.get("endsAt", "") if alert.get("status") == "resolved" else "",
        "fingerprint": alert.get("fingerprint", ""),
        "labels": labels,
    }
    detail.update({k: labels[k] for k in CONTEXT_LABELS if labels.get(k)})
    return detail


def subject(cluster: str, notification: dict[str, Any]) -> str:
    alerts = notification.get("alerts", [])
    name = notification.get("groupLabels", {}).get("alertname") or (
        alerts[0].get("labels", {}).get("alertname", "alert") if alerts else "alert"
    )
    text = f"[slurmstack {cluster}] {str(notification.get('status', 'firing')).upper()}: {name} ({len(alerts)})"
    return text[:SUBJECT_MAX]


def message(details: list[dict[str, Any]]) -> str:
    lines = [f"{d['status']}: {d['alert']} ({d['severity']}): {d['summary']}" for d in details]
    return "\n".join([*lines, "", json.dumps(details, indent=1, sort_keys=True)])


class Relay:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cluster = ctx.config().cluster
        self._topic: str | None = None

    def topic(self) -> str:
        if self._topic is None:
            found = self.ctx.get_parameter(DeployParameter.ALERT_TOPIC_ARN)
            if not found:
                raise AgentError("the alert topic's parameter is not readable")
            self._topic = found
        return self._topic

    def deliver(self, notification: dict[str, Any]) -> list[dict[str, Any]]:
        details = [event_detail(self.cluster, a) for a in notification.get("alerts", [])]
        events = self.ctx.aws.events()
        for start in range(0, len(details), EVENTS_PER_CALL):
            entries = [
                {"Source": ALERT_EVENT_SOURCE, "DetailType": ALERT_EVENT_DETAIL_TYPE,
                 "Detail": json.dumps(d, sort_keys=True), "EventBusName": "default"}
                for d in details[start : start + EVENTS_PER_CALL]
            ]  # fmt: skip
            failed = events.put_events(Entries=entries).get("FailedEntryCount", 0)
            if failed:
                raise AgentError(f"EventBridge refused {failed} of {len(entries)} events")
        if details:
            self.ctx.aws.sns().publish(
                TopicArn=self.topic(),
                Subject=subject(self.cluster, notification),
                Message=message(details),
            )
        log(f"alert-relay: {len(details)} alerts to EventBridge and the topic")
        return details


def serve(ctx: Context, port: int = ALERT_RELAY_PORT, once: bool = False) -> None:
    relay = Relay(ctx)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != PATH:
                self.send_error(404)
                return
            try:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                relay.deliver(json.loads(body))
            except Exception as exc:  # Alertmanager retries: say why, answer 500
                log(f"alert-relay: {exc}")
                self.send_error(500, str(exc)[:200])
                return
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    log(f"alert-relay: listening on 127.0.0.1:{port}{PATH}")
    try:
        if once:
            server.handle_request()
        else:
            server.serve_forever()
    finally:
        server.server_close()

"""Stand-in "fleet-faults": EC2's refusals that moto never gives, on demand, and a record of
the EC2 Fleet requests the power programs send.

moto launches whatever it is asked for; EC2 runs out of capacity. ``Ec2Faults`` sits in front
of moto's application: armed with ``refuse_fleets``, it answers the next CreateFleet calls the
way EC2 answers an instant fleet it cannot fill (HTTP 200, no instances, an error per launch
specification: EC2 API Reference, CreateFleet, "Errors"), and moto never sees them. Every
CreateFleet request is kept, as sent (its query parameters), so a scenario can read what the
resume program asked for: moto does not keep a fleet's launch template overrides. Dry runs
(the head's launch-check at boot) are kept apart and passed to moto, which answers them as EC2
does (DryRunOperation).
"""

from __future__ import annotations

import io
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

EC2_NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"


@dataclass(frozen=True)
class FleetError:
    code: str
    message: str


def insufficient_capacity(instance_type: str, zone: str) -> FleetError:
    """What EC2 says when a zone has none of a type to give (test data, in EC2's words)."""
    return FleetError(
        "InsufficientInstanceCapacity",
        f"We currently do not have sufficient {instance_type} capacity in the Availability "
        f"Zone you requested ({zone}). Our system will be working on provisioning additional "
        "capacity.",
    )


class Ec2Faults:
    """A WSGI application wrapping moto's."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._pending: list[FleetError] = []
        self.fleet_requests: list[dict[str, str]] = []  # every CreateFleet, as sent
        self.dry_runs: list[dict[str, str]] = []  # those with DryRun (the head's launch-check)

    def refuse_fleets(self, error: FleetError, times: int = 1) -> None:
        with self._lock:
            self._pending += [error] * times

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            params = {k: v[-1] for k, v in parse_qs(body.decode(errors="replace")).items()}
            if params.get("Action") == "CreateFleet" and params.get("DryRun") == "true":
                with self._lock:
                    self.dry_runs.append(params)
            elif params.get("Action") == "CreateFleet":
                with self._lock:
                    self.fleet_requests.append(params)
                    error = self._pending.pop(0) if self._pending else None
                if error is not None:
                    return _refused(params, error, start_response)
        return self._app(environ, start_response)


def _refused(
    params: dict[str, str], error: FleetError, start_response: Callable[..., Any]
) -> list[bytes]:
    lifecycle = {"spot": "spot"}.get(
        params.get("TargetCapacitySpecification.DefaultTargetCapacityType", ""), "on-demand"
    )
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<CreateFleetResponse xmlns="{EC2_NAMESPACE}">'
        f"<requestId>{uuid.uuid4()}</requestId>"
        f"<fleetId>fleet-{uuid.uuid4()}</fleetId>"
        f"<errorSet><item><lifecycle>{lifecycle}</lifecycle>"
        f"<errorCode>{escape(error.code)}</errorCode>"
        f"<errorMessage>{escape(error.message)}</errorMessage></item></errorSet>"
        f"<fleetInstanceSet/>"
        f"</CreateFleetResponse>"
    ).encode()
    return xml_response(start_response, body)


def xml_response(
    start_response: Callable[..., Any], body: bytes, status: str = "200 OK"
) -> list[bytes]:
    """An EC2 query API answer, as the stand-ins in front of moto give it."""
    start_response(status, [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
    return [body]

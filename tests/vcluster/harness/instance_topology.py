"""Stand-in "instance-topology": EC2's DescribeInstanceTopology, which moto lacks.

``InstanceTopology`` sits in front of moto's application and answers that action from a layout
of leaves: each instance of a type EC2 reports a topology for (rules.topology.covered) is given,
at the first question about it, the first leaf with room (in the order the layout lists them),
and keeps it while it lives, as an instance keeps its place in EC2's network. The answer has
EC2's shape (EC2 API Reference, DescribeInstanceTopology: instanceSet of instanceId,
instanceType, groupName, networkNodeSet top layer first, availabilityZone; nextToken), paged at
MaxResults (EC2's default 20), so the agent's paging is exercised too. An instance of another
type, or not running, is left out of the answer, as EC2 leaves it out. Armed with ``refuse``,
every call is answered as EC2 throttles (HTTP 503, RequestLimitExceeded) until ``answer_again``.
Every call is kept (the instance ids it asked about).
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

from slurmstack.rules.topology import covered

from .fleet_faults import EC2_NAMESPACE, xml_response

ACTION = "DescribeInstanceTopology"
DEFAULT_PAGE = 20  # EC2's MaxResults default for this action
MOTO_ACCOUNT = "123456789012"  # moto's default account


@dataclass(frozen=True)
class Leaf:
    """A leaf's network nodes, top layer first, and how many instances it holds."""

    network_nodes: tuple[str, ...]
    size: int


class InstanceTopology:
    """A WSGI application wrapping moto's (or another stand-in in front of it)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], region: str) -> None:
        self._app = app
        self._region = region
        self._lock = threading.Lock()
        self._leaves: tuple[Leaf, ...] = ()
        self._placed: dict[str, Leaf] = {}  # instance id -> its leaf, once asked about
        self._refusing = False
        self.calls: list[list[str]] = []  # instance ids of each call, as asked

    def lay_out(self, leaves: Iterable[Leaf]) -> None:
        with self._lock:
            self._leaves = tuple(leaves)
            self._placed.clear()

    def placement(self, instance_id: str) -> tuple[str, ...] | None:
        """The network nodes the stand-in answered for an instance, if it was asked about."""
        with self._lock:
            leaf = self._placed.get(instance_id)
        return leaf.network_nodes if leaf else None

    def refuse(self) -> None:
        with self._lock:
            self._refusing = True

    def answer_again(self) -> None:
        with self._lock:
            self._refusing = False

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD") != "POST":
            return self._app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        query = parse_qs(body.decode(errors="replace"))
        if query.get("Action", [""])[-1] != ACTION:
            return self._app(environ, start_response)
        ids = [v[-1] for k, v in sorted(query.items(), key=_member_order) if _is_id(k)]
        with self._lock:
            self.calls.append(ids)
            if self._refusing:
                return _throttled(start_response)
            items = self._answer(ids)
        first = int(query.get("NextToken", ["0"])[-1])
        page = int(query.get("MaxResults", [str(DEFAULT_PAGE)])[-1])
        token = first + page if first + page < len(items) else None
        return _respond(items[first : first + page], token, start_response)

    def _answer(self, ids: list[str]) -> list[dict[str, Any]]:
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[MOTO_ACCOUNT][self._region]
        running = {
            i.id: i
            for i in backend.all_instances()
            if i.state == "running" and covered(i.instance_type)
        }
        live = set(running)
        self._placed = {i: leaf for i, leaf in self._placed.items() if i in live}
        out = []
        for instance_id in sorted(set(ids) & live):
            leaf = self._placed.get(instance_id) or self._room()
            if leaf is None:
                continue  # no leaf with room: EC2 has no answer for it (yet)
            self._placed[instance_id] = leaf
            instance = running[instance_id]
            out.append(
                {
                    "instanceId": instance_id,
                    "instanceType": instance.instance_type,
                    "networkNodes": leaf.network_nodes,
                    "groupName": instance.placement.group_name or "",
                    "availabilityZone": instance.placement.zone or "",
                }
            )
        return out

    def _room(self) -> Leaf | None:
        for leaf in self._leaves:
            if sum(1 for placed in self._placed.values() if placed == leaf) < leaf.size:
                return leaf
        return None


def _is_id(key: str) -> bool:
    return key.startswith("InstanceId.")


def _member_order(item: tuple[str, list[str]]) -> tuple[str, int]:
    prefix, _, index = item[0].rpartition(".")
    return (prefix, int(index)) if index.isdigit() else (item[0], 0)


def _respond(
    items: list[dict[str, Any]], token: int | None, start_response: Callable[..., Any]
) -> list[bytes]:
    members = "".join(
        f"<item><instanceId>{escape(i['instanceId'])}</instanceId>"
        f"<instanceType>{escape(i['instanceType'])}</instanceType>"
        + (f"<groupName>{escape(i['groupName'])}</groupName>" if i["groupName"] else "")
        + "<networkNodeSet>"
        + "".join(f"<item>{escape(n)}</item>" for n in i["networkNodes"])
        + "</networkNodeSet>"
        f"<availabilityZone>{escape(i['availabilityZone'])}</availabilityZone>"
        "</item>"
        for i in items
    )
    next_token = f"<nextToken>{token}</nextToken>" if token is not None else ""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<DescribeInstanceTopologyResponse xmlns="{EC2_NAMESPACE}">'
        f"<requestId>{uuid.uuid4()}</requestId>"
        f"<instanceSet>{members}</instanceSet>{next_token}"
        f"</DescribeInstanceTopologyResponse>"
    ).encode()
    return xml_response(start_response, body)


def _throttled(start_response: Callable[..., Any]) -> list[bytes]:
    # EC2's throttling answer (EC2 API Reference, "Error codes": RequestLimitExceeded).
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
        "<Message>Request limit exceeded.</Message></Error></Errors>"
        f"<RequestID>{uuid.uuid4()}</RequestID></Response>"
    ).encode()
    return xml_response(start_response, body, "503 Service Unavailable")

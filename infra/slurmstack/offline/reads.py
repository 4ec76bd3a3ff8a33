"""The mock monitor's side of ``get``: a read of a resource that exists outside the stack (a
file system of yours) is recorded apart from the registrations, since Pulumi never creates,
updates or deletes what it only reads, and answered from the World's stand-ins
(slurmstack.offline.existing), not through the mocks' ``new_resource``."""

from __future__ import annotations

import threading
from typing import Any

from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from slurmstack.offline.existing import read_stand_in
from slurmstack.offline.mocks import StandInMocks


class ReadingMonitor(MockMonitor):
    """Pulumi's mock monitor, answering reads from the mocks' World."""

    def __init__(self, mocks: StandInMocks) -> None:
        super().__init__(mocks)
        self.stand_ins = mocks
        self.reads: list[tuple[str, str, str]] = []  # (type, logical name, id) of each get
        self._read_lock = threading.Lock()

    def ReadResource(self, request: Any) -> Any:
        from pulumi.runtime.proto import resource_pb2
        from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

        _ensure_event_loop()  # type: ignore[no-untyped-call]
        mocks = self.stand_ins
        with self._read_lock:
            self.reads.append((request.type, request.name, request.id))
            state = read_stand_in(request.type, request.id, mocks.region, mocks.world, mocks.known)
        props_proto = _sync_await(rpc.serialize_properties(state, {}))
        urn = self.make_urn(request.parent, request.type, request.name)
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, request.id, state)
        return resource_pb2.ReadResourceResponse(urn=urn, properties=props_proto)

"""Pulumi mocks shaped like AWS, for the offline engine and for a team's own unit tests.

The program reads outputs only AWS computes (an Image Builder image's AMIs, a network
interface's address, the caller's account), so mocks that echo inputs back, as the minimal
example of Pulumi's testing guide does, stop it half-way; these answer with the stand-ins of
``slurmstack.offline.standins`` instead. Nothing here talks to AWS.
"""

from __future__ import annotations

import threading
from typing import Any

from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs, Mocks

from slurmstack.offline.existing import World, call_existing
from slurmstack.offline.standins import DEFAULT_REGION, Context, call_stand_in, stand_in

SUBNET_TYPE = "aws:ec2/subnet:Subnet"
NETWORK_INTERFACE_TYPE = "aws:ec2/networkInterface:NetworkInterface"


class StandInMocks(Mocks):
    """Pulumi mocks (``pulumi.runtime.set_mocks``) that answer like AWS: every resource gets
    an id and the outputs AWS would compute (ARNs, addresses, Image Builder's AMIs), derived
    from its type, name and inputs; the provider functions the program calls
    (getCallerIdentity, getPartition, getRegion, SSM parameters) answer for ``region``. A
    subclass may record or change what it returns (see docs/testing-with-mocks.md)."""

    def __init__(self, region: str = DEFAULT_REGION, world: World | None = None) -> None:
        self.region = region
        # What exists before the stack (file systems of yours, their groups): lookups of it
        # and reads of it answer from here (slurmstack.offline.existing).
        self.world = world or World()
        self.new_resource_calls = 0
        self.invokes: list[tuple[str, dict[str, Any]]] = []
        # Facts later stand-ins use: subnet id -> CIDR (instances get addresses inside it),
        # network interface id -> address (an instance launched with it has that address).
        self.known: dict[str, str] = {}
        self._lock = threading.Lock()

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        with self._lock:
            self.new_resource_calls += 1
        if not args.custom:
            return "", {}
        rid, state = stand_in(
            Context(args.typ, args.name, dict(args.inputs), self.region, self.known)
        )
        if args.typ == SUBNET_TYPE and isinstance(args.inputs.get("cidrBlock"), str):
            with self._lock:
                self.known[rid] = args.inputs["cidrBlock"]
        if args.typ == NETWORK_INTERFACE_TYPE:
            with self._lock:
                self.known[rid] = state["privateIp"]
        return rid, state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        with self._lock:
            self.invokes.append((args.token, dict(args.args)))
            existing = call_existing(
                args.token, dict(args.args), self.region, self.world, self.known
            )
        if existing is not None:
            return existing, []
        return call_stand_in(args.token, dict(args.args), self.region), []

"""NCCL's own log lines in an nccl-tests output (NCCL_DEBUG=WARN or INFO): which peer a host's
NCCL says failed it, and the address each host bootstraps from, so a failure that names a peer
by address, or by its fully qualified name, is put on a host of the run.

Lines read (samples in tests/unit/node/workload/data/nccl):

    kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer
        10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)
    gpu004:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed
        by remote peer gpu004.ds-a4-r02.abc.com<55693>
    puente:21488:21488 [0] NCCL INFO Bootstrap : Using enp45s0f0:149.153.153.83<0>
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass, field

LINE = re.compile(
    r"^(?P<host>[^\s:]+):\d+:\d+ \[[^\]]*\] (?:\S+ )?NCCL (?P<level>WARN|INFO) (?P<text>.*)$"
)
BOOTSTRAP = re.compile(r"^Bootstrap ?: Using [^:\s]+:(?P<address>[^<\s]+)<\d+>")
# NCCL prints a socket peer as <address><port>: "peer 10.0.35.1<49189>", "from 10.2.3.4<58355>".
PEER = re.compile(r"\b(?:peer|from|to)\s+(?P<peer>[\w.:-]+)<\d+>")
TEXT_CHARACTERS = 120


@dataclass(frozen=True)
class PeerWarning:
    host: str  # whose NCCL warned
    peer: str  # the peer it names, as printed
    text: str


@dataclass
class NcclLog:
    addresses: dict[str, str] = field(default_factory=dict)  # bootstrap address -> host
    warnings: list[PeerWarning] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)  # every host whose NCCL printed a line

    def read(self, line: str) -> bool:
        """Take in one line; True when it was one of NCCL's."""
        match = LINE.match(line.strip())
        if match is None:
            return False
        text = match["text"].strip()
        self.hosts.add(match["host"])
        if match["level"] == "INFO":
            if boot := BOOTSTRAP.match(text):
                self.addresses[boot["address"]] = match["host"]
        elif peer := PEER.search(text):
            self.warnings.append(PeerWarning(match["host"], peer["peer"], text))
        return True

    def host_of(self, peer: str, hosts: Collection[str]) -> str | None:
        """The run's host a peer names: by its bootstrap address, its name or its short name."""
        if peer in self.addresses:
            return self.addresses[peer]
        hosts = {*hosts, *self.hosts}
        if peer in hosts:
            return peer
        try:
            ipaddress.ip_address(peer)
            return None  # an address no host bootstrapped from
        except ValueError:
            short = peer.split(".", 1)[0]
            return short if short in hosts else None

    def blamed(self, hosts: Collection[str]) -> tuple[PeerWarning, str | None] | None:
        """The first warning that names a peer, and the host that peer is (None: unknown)."""
        if not self.warnings:
            return None
        first = self.warnings[0]
        return first, self.host_of(first.peer, hosts)

    def describe(self, hosts: Collection[str]) -> str:
        """One line: who names which peer, and what NCCL said."""
        blamed = self.blamed(hosts)
        if blamed is None:
            return ""
        warning, host = blamed
        peer = warning.peer if host is None or host == warning.peer else f"{host} ({warning.peer})"
        return f"{warning.host} names peer {peer}: {warning.text[:TEXT_CHARACTERS]}"

"""AWS for the virtual cluster: moto in server mode, in this process.

One moto application, two listeners: on the fabric's router address, where the nodes reach it
through the standard endpoint override (``AWS_ENDPOINT_URL``), and on loopback, where the
harness itself talks to it. Both serve the same in-memory backends, so what the harness puts in
is what the nodes read, and what the nodes change (an instance marked Unhealthy) the harness
sees.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import boto3
from werkzeug.serving import BaseWSGIServer, make_server

from .fleet_faults import Ec2Faults
from .groups import ACTIONS
from .instance_topology import InstanceTopology
from .netns import Fabric, run_in_namespace

# Any port works inside the fabric namespace; this one reads as "the moto port".
NODE_PORT = 5000
# moto accepts any credentials; nodes get theirs from the metadata service like an instance.
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


class MotoServer:
    def __init__(self, fabric: Fabric, region: str) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app

        self.region = region
        # Stand-in "asg-lifecycle": the lifecycle calls moto lacks.
        ACTIONS.install()
        self.lifecycle = ACTIONS
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not one line per request
        # Stand-in "fleet-faults": EC2's capacity refusals on demand, in front of moto.
        self.faults = Ec2Faults(DomainDispatcherApplication(create_backend_app))
        # Stand-in "instance-topology": EC2's DescribeInstanceTopology, which moto lacks.
        self.topology = InstanceTopology(self.faults, region)
        app = self.topology
        self._local = make_server("127.0.0.1", 0, app, threaded=True)
        self._bridge: BaseWSGIServer = run_in_namespace(
            fabric.namespace, lambda: make_server(fabric.router, NODE_PORT, app, threaded=True)
        )
        self.node_endpoint = f"http://{fabric.router}:{NODE_PORT}"
        self.local_endpoint = f"http://127.0.0.1:{self._local.server_port}"
        for server in (self._local, self._bridge):
            threading.Thread(target=server.serve_forever, daemon=True, name="moto").start()

    def client(self, service: str) -> Any:
        return boto3.client(
            service, endpoint_url=self.local_endpoint, region_name=self.region, **CREDENTIALS
        )

    def close(self) -> None:
        for server in (self._local, self._bridge):
            server.shutdown()
            server.server_close()

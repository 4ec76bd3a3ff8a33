"""The stand-in instance metadata service: IMDSv2 at 169.254.169.254 for every node.

It listens in the fabric namespace and tells nodes apart by the source address of the request
(each node namespace has its own), answering with that node's instance id, address, type and
zone, its user data, and credentials for its instance role, which is how boto3 on a node finds
credentials with no configuration (the metadata provider of botocore's default chain). As the
stack requires (``http_tokens = required``), a value is only given for a session token obtained
with ``PUT /latest/api/token``.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .netns import METADATA_ADDRESS, Fabric, run_in_namespace

TOKEN_PATH = "/latest/api/token"
IDENTITY_PATH = "/latest/dynamic/instance-identity/document"
# moto's account (moto.core.DEFAULT_ACCOUNT_ID), which every instance there belongs to.
ACCOUNT_ID = "123456789012"
TOKEN_TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"
ROLE = "vcluster-node"
# moto accepts any credentials; what matters is that botocore finds them here.
CREDENTIALS = {
    "Code": "Success",
    "Type": "AWS-HMAC",
    "AccessKeyId": "ASIAVCLUSTERTESTING",
    "SecretAccessKey": "testing",
    "Token": "testing",
    "Expiration": "2099-01-01T00:00:00Z",
    "LastUpdated": "2026-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class Instance:
    instance_id: str
    address: str
    instance_type: str
    availability_zone: str
    user_data: str
    mac: str = ""  # the primary network interface's MAC address
    # Its tags, where its launch template puts them in the metadata (InstanceMetadataTags
    # enabled); None: not there (EC2 answers 404 under tags/instance).
    tags: dict[str, str] | None = None

    def identity_document(self) -> str:
        """/latest/dynamic/instance-identity/document, the fields nodes read (moto's account)."""
        return json.dumps(
            {
                "accountId": ACCOUNT_ID,
                "instanceId": self.instance_id,
                "instanceType": self.instance_type,
                "privateIp": self.address,
                "availabilityZone": self.availability_zone,
                "region": self.availability_zone[:-1],
            }
        )

    def meta_data(self) -> dict[str, str]:
        hostname = "ip-" + self.address.replace(".", "-")
        return {
            "instance-id": self.instance_id,
            "local-ipv4": self.address,
            "instance-type": self.instance_type,
            "placement/availability-zone": self.availability_zone,
            "placement/region": self.availability_zone[:-1],
            "mac": self.mac,
            "local-hostname": hostname,
            "hostname": hostname,
            "iam/security-credentials/": ROLE,
            f"iam/security-credentials/{ROLE}": json.dumps(CREDENTIALS),
            **self.tag_data(),
        }

    def tag_data(self) -> dict[str, str]:
        """tags/instance (the keys, one a line) and tags/instance/<key>, as EC2 serves them."""
        if self.tags is None:
            return {}
        listed = {"tags/instance": "\n".join(sorted(self.tags))}
        return listed | {f"tags/instance/{k}": v for k, v in self.tags.items()}


class MetadataService:
    """The instances it knows (by address) and the tokens it gave out; ``serve`` puts it on
    the fabric."""

    def __init__(self) -> None:
        self._instances: dict[str, Instance] = {}
        self._notices: dict[str, dict[str, str]] = {}  # address -> meta-data path -> value
        self._tokens: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def serve(self, fabric: Fabric) -> None:
        handler = _handler(self)
        self._server = run_in_namespace(
            fabric.namespace, lambda: ThreadingHTTPServer((METADATA_ADDRESS, 80), handler)
        )
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="imds").start()

    def register(self, instance: Instance) -> None:
        with self._lock:
            self._instances[instance.address] = instance

    def unregister(self, address: str) -> None:
        with self._lock:
            self._instances.pop(address, None)
            self._notices.pop(address, None)

    def notice(self, address: str, path: str, value: str | None) -> None:
        """What EC2 tells one instance at a meta-data path (a spot interruption notice, its
        group's target lifecycle state); None takes it back."""
        with self._lock:
            notices = self._notices.setdefault(address, {})
            if value is None:
                notices.pop(path, None)
            else:
                notices[path] = value

    def new_token(self) -> str:
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._tokens.add(token)
        return token

    def answer(self, source: str, path: str, token: str | None) -> tuple[int, str]:
        with self._lock:
            instance = self._instances.get(source)
            valid = token in self._tokens
        if not valid:
            return 401, "IMDSv2 session token required"
        if instance is None:
            return 404, f"no instance at {source}"
        if path == "/latest/user-data":
            return 200, instance.user_data
        if path == IDENTITY_PATH:
            return 200, instance.identity_document()
        key = path.removeprefix("/latest/meta-data/")
        with self._lock:
            value = self._notices.get(source, {}).get(key)
        value = value if value is not None else instance.meta_data().get(key)
        return (200, value) if value is not None else (404, "Not Found")

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _handler(service: MetadataService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            if self.path != TOKEN_PATH or not self.headers.get(TOKEN_TTL_HEADER):
                self._reply(400, "PUT /latest/api/token with a TTL header")
            else:
                self._reply(200, service.new_token())

        def do_GET(self) -> None:
            status, body = service.answer(
                self.client_address[0], self.path, self.headers.get(TOKEN_HEADER)
            )
            self._reply(status, body)

        def _reply(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per request would drown the test output

    return Handler

"""A stand-in for the instance metadata service, run by the firewall tests inside a network
namespace they made: IMDSv2's token call and one metadata path, on the IPv4 and IPv6 addresses
given, port 80. Prints "ready" once both listen; exits by itself after --lifetime seconds in
case the test that started it could not stop it.

    python metadata_standin.py 169.254.169.254 fd00:ec2::254 --lifetime 120
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "standin-token"
INSTANCE_ID = "i-0standin000000000"


class Handler(BaseHTTPRequestHandler):
    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self) -> None:
        if self.path == "/latest/api/token":
            self._answer(200, TOKEN)
        else:
            self._answer(404, "")

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            self._answer(401, "")
        elif self.path == "/latest/meta-data/instance-id":
            self._answer(200, INSTANCE_ID)
        else:
            self._answer(404, "")

    def log_message(self, format: str, *args: object) -> None:
        pass


class V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("ipv4")
    parser.add_argument("ipv6")
    parser.add_argument("--lifetime", type=float, default=120.0)
    args = parser.parse_args()
    servers = [ThreadingHTTPServer((args.ipv4, 80), Handler), V6Server((args.ipv6, 80), Handler)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    time.sleep(args.lifetime)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""hostnamectl on a virtual-cluster node: a stand-in (no systemd-hostnamed in a namespace).
`set-hostname NAME` names the node's own UTS namespace and writes /etc/hostname; without a
verb it prints the hostname. Standard library only."""

import socket
import sys


def main(argv: list[str]) -> int:
    words = [a for a in argv if not a.startswith("-")]
    if words[:1] == ["set-hostname"] and len(words) == 2:
        socket.sethostname(words[1])
        with open("/etc/hostname", "w") as handle:
            handle.write(words[1] + "\n")
        return 0
    if not words or words[0] in ("status", "hostname"):
        print(socket.gethostname())
        return 0
    print(f"hostnamectl (virtual cluster): unsupported {' '.join(argv)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

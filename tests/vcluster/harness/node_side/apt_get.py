#!/usr/bin/python3
"""apt-get on a virtual-cluster node: the stand-in "image-packages" (see ../standins.py).

The bootstrap's `packages` step runs for real and calls this: it installs nothing (the packages
are this machine's), and records each call, one line of its arguments, in the node's
/var/log/vcluster/apt-get.log so a scenario can see what the node asked for.
Standard library only: it runs on the node's system python.
"""

import os
import shlex
import sys

LOG = "/var/log/vcluster/apt-get.log"


def main(argv: list[str]) -> int:
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open(LOG, "a") as handle:
        handle.write(shlex.join(argv) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

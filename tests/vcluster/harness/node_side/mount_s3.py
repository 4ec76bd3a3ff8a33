#!/usr/bin/python3
"""Stand-in "mountpoint-s3" (see ../standins.py): `mount-s3` as the agent's s3-mounts step runs
it, done by Debian's s3fs against moto's S3.

  mount-s3 BUCKET PATH [--prefix P] [--region R] [--read-only] [--dir-mode M] [--allow-other]
           [--allow-delete] [--allow-overwrite] [--cache DIR] [--max-cache-size MIB]
           [--metadata-ttl SECONDS]

Mountpoint's options become s3fs's: the prefix is the bucket's sub path, --read-only a
read-only FUSE mount whose files read as no one's to write (umask 0222), --dir-mode the mask
of a writable one, --cache s3fs's local cache, --metadata-ttl its stat cache lifetime. The
credentials come as Mountpoint takes them on an instance: from the metadata service (IMDSv2),
which only root reaches; this runs as root. The role's name is read here and given to s3fs
(iam_role=<name>): Debian 12's s3fs 1.90 asks for it without an IMDSv2 token when told "auto"
(s3fs-fuse issue #1762, fixed in 1.91), which the stack's required tokens refuse. s3fs always lets writers
overwrite and delete (--allow-delete and --allow-overwrite change nothing here), and has no
cache size in MiB (--max-cache-size is accepted and not applied).

Standard library only: it runs on the node's system python.
"""

import argparse
import os
import subprocess
import sys
import time
import urllib.request

AWS_ENV = "/etc/vcluster/aws.env"  # standins.HEALTH_CHECK_ENV: the node's AWS settings
LOG = "/var/log/vcluster/mount-s3.log"
IMDS = "http://169.254.169.254/latest"
MOUNTED_SECONDS = 20  # how long s3fs may take to serve the mount after it detaches


def serving(path: str) -> bool:
    """Mounted and answering (a listing goes through s3fs to the bucket)."""
    with open("/proc/self/mounts") as handle:
        if not any(line.split()[1] == path for line in handle):
            return False
    try:
        os.listdir(path)
    except OSError:  # ENOTCONN: s3fs died in its start-up
        return False
    return True


def role_name() -> str:
    """The instance role's name, as an SDK's credential chain finds it (IMDSv2)."""
    put = urllib.request.Request(f"{IMDS}/api/token", method="PUT",
                                 headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})  # fmt: skip
    with urllib.request.urlopen(put, timeout=10) as answer:
        token = answer.read().decode()
    get = urllib.request.Request(f"{IMDS}/meta-data/iam/security-credentials/",
                                 headers={"X-aws-ec2-metadata-token": token})  # fmt: skip
    with urllib.request.urlopen(get, timeout=10) as answer:
        return str(answer.read().decode().split()[0])


def endpoint() -> str:
    """The node's AWS endpoint (moto on the fabric): the environment the boot gives, or the
    node's settings file."""
    if os.environ.get("AWS_ENDPOINT_URL"):
        return os.environ["AWS_ENDPOINT_URL"]
    with open(AWS_ENV) as handle:
        for line in handle:
            key, _, value = line.strip().partition("=")
            if key == "AWS_ENDPOINT_URL":
                return value
    raise SystemExit(f"mount-s3 (stand-in): no AWS_ENDPOINT_URL here or in {AWS_ENV}")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mount-s3")
    parser.add_argument("bucket")
    parser.add_argument("path")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--dir-mode", default="0755")
    parser.add_argument("--allow-other", action="store_true")
    parser.add_argument("--allow-delete", action="store_true")
    parser.add_argument("--allow-overwrite", action="store_true")
    parser.add_argument("--cache", default="")
    parser.add_argument("--max-cache-size", default="")
    parser.add_argument("--metadata-ttl", default="")
    return parser.parse_args(argv)


def s3fs_command(args: argparse.Namespace, url: str, role: str) -> list[str]:
    source = args.bucket + (":/" + args.prefix.rstrip("/") if args.prefix else "")
    options = [f"url={url}", "use_path_request_style", f"endpoint={args.region}",
               f"iam_role={role}", f"logfile={LOG}"]  # fmt: skip
    if args.read_only:
        options += ["ro", "umask=0222"]
    else:
        options.append(f"umask={0o777 & ~int(args.dir_mode, 8):04o}")
    if args.allow_other:
        options.append("allow_other")
    if args.cache:
        options.append(f"use_cache={args.cache}")
    if args.metadata_ttl:
        options.append(f"stat_cache_expire={args.metadata_ttl}")
    return ["s3fs", source, args.path, "-o", ",".join(options)]


def main(argv: list[str]) -> int:
    args = parse(argv)
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    # s3fs checks the bucket, then detaches and serves the mount (as mount-s3 does).
    with open(LOG, "a") as log:
        command = s3fs_command(args, endpoint(), role_name())
        done = subprocess.run(command, stdout=log, stderr=log)
    if done.returncode != 0:
        print(f"mount-s3 (stand-in): s3fs exited {done.returncode}; see {LOG}", file=sys.stderr)
        return done.returncode
    # mount-s3 returns once the bucket is mounted; s3fs returns before its FUSE start-up
    # (where it takes the credentials), which may still fail.
    deadline = time.monotonic() + MOUNTED_SECONDS
    while not serving(os.path.abspath(args.path)):
        if time.monotonic() > deadline:
            print(f"mount-s3 (stand-in): {args.path} not served; see {LOG}", file=sys.stderr)
            return 1
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

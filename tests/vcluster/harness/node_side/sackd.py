#!/usr/bin/python3
"""sackd on a virtual-cluster login node: a stand-in (stand-in "sackd"). Debian 12's Slurm
22.05 has no sackd (Slurm 23.11 brought it). Like sackd in configless mode, this puts the
configuration slurmctld serves (the head's slurm.conf and the files it names) in
/run/slurm/conf, where Slurm's clients look when /etc/slurm has no slurm.conf, and fetches it
again every few seconds (sackd does on every reconfigure). It reads the head's files from the
config store, which is what slurmctld serves here. Runs as SlurmUser, as sackd does: the
metadata firewall keeps it from the instance's credentials, so it signs with moto's test
keys. Standard library and boto3 only."""

import json
import os
import sys
import time

import boto3

ENV = "/etc/vcluster/aws.env"
BOOTSTRAP_ENV = "/etc/slurmstack/bootstrap.env"
CONF_DIR = os.path.join(os.environ.get("RUNTIME_DIRECTORY", "/run/slurm"), "conf")
SERVED = ("slurm.conf", "gres.conf", "cgroup.conf", "plugstack.conf")


def settings(path):
    out = {}
    with open(path) as handle:
        for line in handle:
            key, _, value = line.strip().partition("=")
            if key:
                out[key] = value
    return out


def fetch(region, prefix):
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
    )
    ssm, s3 = session.client("ssm"), session.client("s3")
    value = lambda name: ssm.get_parameter(Name=f"{prefix}/{name}")["Parameter"]["Value"]  # noqa: E731
    bucket, manifest_key = value("bucket/name"), value("config/manifest")
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=manifest_key)["Body"].read())
    files = {}
    for bundle in manifest["bundles"]["head"]:
        body = json.loads(s3.get_object(Bucket=bucket, Key=bundle)["Body"].read())
        files.update(body)
    return {name: files[f"/etc/slurm/{name}"] for name in SERVED if f"/etc/slurm/{name}" in files}


def main():
    os.environ.update(settings(ENV))
    env = settings(BOOTSTRAP_ENV)
    os.makedirs(CONF_DIR, exist_ok=True)
    while True:
        try:
            for name, text in fetch(
                env["SLURMSTACK_REGION"], env["SLURMSTACK_PARAMETER_PREFIX"]
            ).items():
                temporary = os.path.join(CONF_DIR, f".{name}.new")
                with open(temporary, "w") as handle:
                    handle.write(text if isinstance(text, str) else str(text))
                os.chmod(temporary, 0o644)
                os.replace(temporary, os.path.join(CONF_DIR, name))
        except Exception as exc:  # slurmctld's answer is late: sackd retries too
            print(f"vcluster sackd: {exc}", file=sys.stderr, flush=True)
        time.sleep(5)


if __name__ == "__main__":
    main()

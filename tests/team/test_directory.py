"""People from a real directory through real SSSD, configured by the agent (marker `team`):
slapd serves alice and bob over LDAPS on loopback with a CA made here; the people room writes
sssd.conf (the bind password from Secrets Manager, moto's), the CA and nsswitch into a node
tree; sssd runs with that tree in a private mount namespace (the host's /etc untouched) and
answers getent and sshd's key lookup with the directory's ids and keys."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from slurmstack.contract import Directory
from slurmstack.node.context import Context
from slurmstack.node.people import directory

pytestmark = pytest.mark.team

BINARIES = ("slapd", "slapadd", "sssd", "sss_ssh_authorizedkeys", "openssl", "unshare", "getent")
BASE = "dc=example,dc=com"
BIND_DN = f"cn=sssd,{BASE}"
BIND_PASSWORD = "read-only-4-sssd"
ALICE_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO7iLqfLTqwIksZZDY/0oryFx67yVKkT4qRpxyZsjSPy alice@laptop"
)
# openssh-lpk's schema (the sshPublicKey attribute SSSD reads), as directories carry it.
LPK_SCHEMA = """
attributetype ( 1.3.6.1.4.1.24552.500.1.1.1.13 NAME 'sshPublicKey'
  DESC 'OpenSSH Public key' EQUALITY octetStringMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 )
objectclass ( 1.3.6.1.4.1.24552.500.1.1.2.0 NAME 'ldapPublicKey' SUP top AUXILIARY
  DESC 'OpenSSH LPK objectclass' MAY ( sshPublicKey $ uid ) )
"""


def require() -> None:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if os.geteuid() != 0:
        missing.append("root (a private mount namespace for sssd)")
    if missing:
        message = (
            f"needs {', '.join(missing)} (apt: slapd ldap-utils sssd-ldap sssd-tools libnss-sss)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def certificates(directory: Path) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.pem")  # fmt: skip
    for name in ("server.key", "server.pem", "ca.pem"):
        (directory / name).chmod(0o644)


def directory_entries() -> str:
    people = []
    for name, uid in (("alice", 5001), ("bob", 5002)):
        key = f"sshPublicKey: {ALICE_KEY}\n" if name == "alice" else ""
        people.append(
            f"dn: uid={name},ou=people,{BASE}\nobjectClass: inetOrgPerson\n"
            f"objectClass: posixAccount\nobjectClass: ldapPublicKey\nuid: {name}\ncn: {name}\n"
            f"sn: {name}\nuidNumber: {uid}\ngidNumber: 6000\nhomeDirectory: /home/{name}\n"
            f"loginShell: /bin/bash\n{key}"
        )
    return "\n".join(
        [
            f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: test\n",
            f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n",
            f"dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n",
            f"dn: {BIND_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n"
            f"cn: sssd\nuserPassword: {BIND_PASSWORD}\n",
            f"dn: cn=research,ou=groups,{BASE}\nobjectClass: posixGroup\ncn: research\n"
            "gidNumber: 6000\nmemberUid: alice\nmemberUid: bob\n",
            *people,
        ]
    )


def slapd_conf(work: Path) -> str:
    schemas = "".join(
        f"include /etc/ldap/schema/{s}.schema\n" for s in ("core", "cosine", "nis", "inetorgperson")
    )
    return (
        f"{schemas}include {work}/lpk.schema\n"
        f"pidfile {work}/slapd.pid\nmodulepath /usr/lib/ldap\nmoduleload back_mdb\n"
        f"TLSCACertificateFile {work}/ca.pem\nTLSCertificateFile {work}/server.pem\n"
        f"TLSCertificateKeyFile {work}/server.key\n"
        f'database mdb\nsuffix "{BASE}"\nrootdn "cn=admin,{BASE}"\nrootpw admin\n'
        f"directory {work}/db\nmaxsize 10485760\n"
        f"access to attrs=userPassword by anonymous auth by * none\n"
        f'access to * by dn.exact="{BIND_DN}" read by * none\n'
    )


@pytest.fixture
def slapd(tmp_path: Path):  # type: ignore[no-untyped-def]
    require()
    work = tmp_path / "ldap"
    (work / "db").mkdir(parents=True)
    certificates(work)
    (work / "lpk.schema").write_text(LPK_SCHEMA)
    (work / "slapd.conf").write_text(slapd_conf(work))
    (work / "data.ldif").write_text(directory_entries())
    subprocess.run(["slapadd", "-f", str(work / "slapd.conf"), "-l", str(work / "data.ldif")],
                   check=True, capture_output=True)  # fmt: skip
    port = free_port()
    uri = f"ldaps://127.0.0.1:{port}"
    process = subprocess.Popen(
        ["slapd", "-d", "0", "-f", str(work / "slapd.conf"), "-h", f"{uri}/"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"slapd did not start: {process.stderr.read()!r}"
                    ) from None  # type: ignore[union-attr]
                time.sleep(0.2)
        yield uri, (work / "ca.pem").read_text()
    finally:
        process.kill()
        process.wait(timeout=10)


def test_sssd_reads_people_and_keys_from_the_directory_as_the_agent_configures_it(
    slapd: tuple[str, str], tmp_path: Path
) -> None:
    uri, ca = slapd
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    (root / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nshadow: files\n")
    (root / "etc/pam.d").mkdir()
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("secretsmanager").create_secret(Name="ldap/sssd", SecretString=BIND_PASSWORD)
        (root / "etc/slurmstack").mkdir()
        (root / "etc/slurmstack/bootstrap.env").write_text(
            "SLURMSTACK_CLUSTER=c\nSLURMSTACK_REGION=us-east-1\nSLURMSTACK_ROLE=login/login\n"
            "SLURMSTACK_PARAMETER_PREFIX=/slurmstack/c\nSLURMSTACK_MUNGE_SECRET=m\n"
            "SLURMSTACK_MANIFEST_PARAMETER=/m\nSLURMSTACK_BUCKET_PARAMETER=/b\n"
        )
        wanted = Directory(
            kind="ldap",
            uris=(uri,),
            search_base=BASE,
            bind_dn=BIND_DN,
            bind_password_secret="ldap/sssd",
            ca_certificate=ca,
            attributes={
                "user_name": "uid", "uid_number": "uidNumber", "gid_number": "gidNumber",
                "home_directory": "homeDirectory", "login_shell": "loginShell",
                "ssh_public_key": "sshPublicKey", "group_name": "cn", "group_member": "memberUid",
            },
        )  # fmt: skip
        assert directory.configure(Context(root=root, session=session), wanted)
    assert "passwd: files sss" in (root / "etc/nsswitch.conf").read_text()
    script = f"""
set -e
mount --bind {root}/etc/sssd /etc/sssd
mount --bind {root}/etc/nsswitch.conf /etc/nsswitch.conf
mount -t tmpfs tmpfs /var/lib/sss
mount -t tmpfs tmpfs /run
mkdir -p /var/lib/sss/db /var/lib/sss/pipes/private /var/lib/sss/mc /var/lib/sss/pubconf
chmod 700 /var/lib/sss/pipes/private
sssd -i --logger=stderr 2>{tmp_path}/sssd.log &
for i in $(seq 1 100); do [ -S /var/lib/sss/pipes/nss ] && break; sleep 0.2; done
for i in $(seq 1 50); do getent passwd alice >/dev/null && break; sleep 0.2; done
echo "PASSWD $(getent passwd alice)"
echo "PASSWD $(getent passwd bob)"
echo "GROUP $(getent group research)"
echo "KEYS $(sss_ssh_authorizedkeys alice)"
kill %1
"""
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    log = (tmp_path / "sssd.log").read_text() if (tmp_path / "sssd.log").exists() else ""
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log[-3000:]}"
    out = done.stdout
    assert "alice:*:5001:6000:alice:/home/alice:/bin/bash" in out, f"{out}\n{log[-3000:]}"
    assert "bob:*:5002:6000:bob:/home/bob:/bin/bash" in out
    assert "research:*:6000:" in lines.get("GROUP", "")
    assert ALICE_KEY in out

"""A real directory for the team tests: Debian's slapd serving people over LDAPS with a CA made
here (openssl), the openssh-lpk schema for their SSH keys, and a read-only bind account for
SSSD. Used on loopback (tests/team) and in the virtual cluster's fabric namespace
(tests/vcluster/test_team_directory.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

BINARIES = ("slapd", "slapadd", "sssd", "sss_ssh_authorizedkeys", "openssl", "getent")
BASE = "dc=example,dc=com"
BIND_DN = f"cn=sssd,{BASE}"
BIND_PASSWORD = "read-only-4-sssd"
GROUP = ("research", 6000)
# openssh-lpk's schema (the sshPublicKey attribute SSSD reads), as directories carry it.
LPK_SCHEMA = """
attributetype ( 1.3.6.1.4.1.24552.500.1.1.1.13 NAME 'sshPublicKey'
  DESC 'OpenSSH Public key' EQUALITY octetStringMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 )
objectclass ( 1.3.6.1.4.1.24552.500.1.1.2.0 NAME 'ldapPublicKey' SUP top AUXILIARY
  DESC 'OpenSSH LPK objectclass' MAY ( sshPublicKey $ uid ) )
"""
# The definition's directory.attributes for this schema (rfc2307 with openssh-lpk).
ATTRIBUTES = {
    "user_name": "uid",
    "uid_number": "uidNumber",
    "gid_number": "gidNumber",
    "home_directory": "homeDirectory",
    "login_shell": "loginShell",
    "ssh_public_key": "sshPublicKey",
    "group_name": "cn",
    "group_member": "memberUid",
}


@dataclass(frozen=True)
class Person:
    name: str
    uid: int
    key: str | None = None  # an OpenSSH public key line


def require(*more: str) -> None:
    missing = [b for b in (*BINARIES, *more) if shutil.which(b) is None]
    if os.geteuid() != 0:
        missing.append("root")
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


def certificates(directory: Path, address: str) -> None:
    """A CA, and the server's certificate for ``address`` (an IP SAN) signed by it."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={address}",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (directory / "san.ext").write_text(f"subjectAltName=IP:{address}\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.pem")  # fmt: skip
    for name in ("server.key", "server.pem", "ca.pem"):
        (directory / name).chmod(0o644)


def directory_entries(people: Sequence[Person]) -> str:
    group, gid = GROUP
    entries = [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: test\n",
        f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n",
        f"dn: {BIND_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n"
        f"cn: sssd\nuserPassword: {BIND_PASSWORD}\n",
        f"dn: cn={group},ou=groups,{BASE}\nobjectClass: posixGroup\ncn: {group}\n"
        f"gidNumber: {gid}\n" + "".join(f"memberUid: {p.name}\n" for p in people),
    ]
    for person in people:
        key = f"sshPublicKey: {person.key}\n" if person.key else ""
        entries.append(
            f"dn: uid={person.name},ou=people,{BASE}\nobjectClass: inetOrgPerson\n"
            f"objectClass: posixAccount\nobjectClass: ldapPublicKey\nuid: {person.name}\n"
            f"cn: {person.name}\nsn: {person.name}\nuidNumber: {person.uid}\ngidNumber: {gid}\n"
            f"homeDirectory: /home/{person.name}\nloginShell: /bin/bash\n{key}"
        )
    return "\n".join(entries)


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


def prepare(work: Path, people: Sequence[Person], address: str) -> str:
    """The directory's database with ``people``, its CA and the server's certificate for
    ``address``; returns the CA's certificate (PEM), which the cluster's definition carries."""
    (work / "db").mkdir(parents=True)
    certificates(work, address)
    (work / "lpk.schema").write_text(LPK_SCHEMA)
    (work / "slapd.conf").write_text(slapd_conf(work))
    (work / "data.ldif").write_text(directory_entries(people))
    subprocess.run(["slapadd", "-f", str(work / "slapd.conf"), "-l", str(work / "data.ldif")],
                   check=True, capture_output=True)  # fmt: skip
    return (work / "ca.pem").read_text()


@contextmanager
def serve(work: Path, address: str, port: int, namespace: str | None = None) -> Iterator[str]:
    """slapd on the prepared ``work`` at ldaps://address:port, in network namespace
    ``namespace`` when given (else this one); yields the URI; stopped by its pid on leaving."""
    uri = f"ldaps://{address}:{port}"
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    log = open(work / "slapd.log", "wb")  # noqa: SIM115 - closed below
    # `ip netns exec` execs slapd: the pid is slapd's.
    process = subprocess.Popen(
        [*prefix, "slapd", "-d", "0", "-f", str(work / "slapd.conf"), "-h", f"{uri}/"],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 20
        probe = [*prefix, "python3", "-c",
                 f"import socket; socket.create_connection(('{address}', {port}), timeout=1)"]  # fmt: skip
        while subprocess.run(probe, capture_output=True).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"slapd did not start: {(work / 'slapd.log').read_text()}")
            time.sleep(0.2)
        yield uri
    finally:
        process.kill()
        process.wait(timeout=10)
        log.close()

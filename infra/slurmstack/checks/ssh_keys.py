"""What an OpenSSH public key line must be (users[].ssh_keys): a key type OpenSSH accepts,
a base64 blob that decodes and names the same type, an optional comment."""

from __future__ import annotations

import base64
import binascii
import struct

# OpenSSH's public key types (ssh-keygen -t, OpenSSH 9): DSA is gone from OpenSSH 9.8 (and
# refused by default since 7.0), so a ssh-dss key would log nobody in.
SSH_KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)


def ssh_key_problem(line: str) -> str | None:
    """Why ``line`` is not an OpenSSH public key line (type, base64 blob, optional comment)."""
    parts = line.strip().split(None, 2)
    if len(parts) < 2:
        return "expected '<type> <base64> [comment]', e.g. the one line of ~/.ssh/id_ed25519.pub"
    kind, blob = parts[0], parts[1]
    if kind not in SSH_KEY_TYPES:
        if kind == "ssh-dss":
            return "DSA keys (ssh-dss) are refused by OpenSSH: make an ed25519 key"
        return f"{kind[:40]!r} is not an OpenSSH key type ({', '.join(sorted(SSH_KEY_TYPES))})"
    try:
        raw = base64.b64decode(blob, validate=True)
        (length,) = struct.unpack(">I", raw[:4])
        inner = raw[4 : 4 + length].decode()
    except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
        return "the key's base64 part does not decode: copy the whole line of the .pub file"
    if inner != kind:
        return f"the key says {kind} but its data is a {inner[:40]} key: the line is mangled"
    return None

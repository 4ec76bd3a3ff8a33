"""slurmstack.stable_gzip: any gzip reader reads what it writes, and what it writes depends on
the input alone (not on the zlib this Python links)."""

from __future__ import annotations

import gzip
import hashlib
import random
import zlib

import pytest

from slurmstack import stable_gzip

RANDOM = random.Random(12)
CASES = {
    "empty": b"",
    "one byte": b"x",
    "no repeats": bytes(range(256)),
    "random": RANDOM.randbytes(70_000),
    # a run longer than the longest match (258) and a match exactly the window away (32 KiB)
    "long run": b"a" * 100_000,
    "window apart": (block := RANDOM.randbytes(stable_gzip.WINDOW)) + block + b"tail",
    "every length": b"".join(bytes([i % 251]) * i for i in range(1, 300)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gzip_and_zlib_read_it_back(name: str) -> None:
    data = CASES[name]
    packed = stable_gzip.compress(data)
    assert gzip.decompress(packed) == data
    assert zlib.decompress(stable_gzip.deflate(data), wbits=-15) == data


def test_the_bytes_depend_on_the_input_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same input, same bytes, with zlib's compressor out of reach (crc32 is a checksum, the
    same everywhere); no time or name in the header."""
    data = CASES["every length"] * 3
    first = stable_gzip.compress(data)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("zlib's compressor was used")

    monkeypatch.setattr(zlib, "compress", refuse)
    monkeypatch.setattr(zlib, "compressobj", refuse)
    assert stable_gzip.compress(data) == first
    assert first[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def test_repeated_text_shrinks() -> None:
    text = b"".join(f"  - [slurmstack-bootstrap, run, step-{i % 7}]\n".encode() for i in range(400))
    assert len(stable_gzip.compress(text)) < len(text) / 5


def test_the_encoding_does_not_change_between_versions() -> None:
    """The bytes are pinned: a faster encoder that wrote other bytes for the same document
    would give every deployed pool a new launch template version, and so an instance refresh.
    The digest was recorded with the first encoder (per-position insertion, per-symbol codes)
    and held when its search and bit packing were rewritten for speed."""
    text = b"".join(f"  - [slurmstack-bootstrap, run, step-{i % 7}]\n".encode() for i in range(400))
    data = CASES["every length"] * 3 + random.Random(12).randbytes(5000) + text
    packed = stable_gzip.compress(data)
    assert (len(data), len(packed)) == (155_550, 8_360)
    assert hashlib.sha256(packed).hexdigest() == (
        "5b7d1154a5c467a85c3855f907ac79bf3d7762876535cc4abaf52ad7d929fa16"
    )

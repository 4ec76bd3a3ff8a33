"""gzip whose bytes depend on the input only, never on the zlib the deployer's Python links.

The stack gives EC2 the nodes' user data gzip-compressed (slurmstack.stack.user_data). Pulumi
compares those bytes with the deployed ones: different bytes for the same document would make
a new launch template version, and the instance refresh would replace every node of the pool.
zlib's output is not specified, only its decoding is, and Python builds link different zlibs
(zlib, zlib-ng), so this module writes the stream itself: one DEFLATE block with the fixed
Huffman codes (RFC 1951, 3.2.6) and greedy LZ77 matches, in a gzip member with no name and no
time (RFC 1952). About 40% of the text's size for a cloud-init document; any gzip reader
(cloud-init's, Python's) reads it.
"""

from __future__ import annotations

import bisect
import struct
import zlib

WINDOW = 32 * 1024  # the farthest back a match may point (RFC 1951, 2)
MIN_MATCH, MAX_MATCH = 3, 258
# Candidates looked at per position: enough for text, bounded so a long run stays linear.
MAX_CANDIDATES = 64

# RFC 1951, 3.2.5: the lengths and distances each code starts at, and its extra bits.
LENGTH_BASES: tuple[int, ...] = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43)
LENGTH_BASES += (51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258)
LENGTH_EXTRA: tuple[int, ...] = (
    (0,) * 8 + (1,) * 4 + (2,) * 4 + (3,) * 4 + (4,) * 4 + (5,) * 4 + (0,)
)
DISTANCE_BASES: tuple[int, ...] = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193)
DISTANCE_BASES += (257, 385, 513, 769)
DISTANCE_BASES += (1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577)
DISTANCE_EXTRA = tuple(max(0, code // 2 - 1) for code in range(30))
END_OF_BLOCK = 256

# RFC 1952, 2.3: magic, deflate, no flags, mtime 0, no extra flags, OS "unknown".
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


class _BitWriter:
    """Bits into bytes, least significant bit first (RFC 1951, 3.1.1)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self._bits = 0
        self._count = 0

    def bits(self, value: int, count: int) -> None:
        self._bits |= value << self._count
        self._count += count
        while self._count >= 8:
            self.out.append(self._bits & 0xFF)
            self._bits >>= 8
            self._count -= 8

    def code(self, code: int, length: int) -> None:
        """A Huffman code: its most significant bit goes first."""
        self.bits(int(format(code, f"0{length}b")[::-1], 2), length)

    def finish(self) -> bytes:
        if self._count:
            self.out.append(self._bits & 0xFF)
            self._bits, self._count = 0, 0
        return bytes(self.out)


def _literal_length(writer: _BitWriter, symbol: int) -> None:
    """A literal/length symbol in the fixed code (RFC 1951, 3.2.6)."""
    if symbol < 144:
        writer.code(0x30 + symbol, 8)
    elif symbol < 256:
        writer.code(0x190 + symbol - 144, 9)
    elif symbol < 280:
        writer.code(symbol - 256, 7)
    else:
        writer.code(0xC0 + symbol - 280, 8)


def _match(writer: _BitWriter, length: int, distance: int) -> None:
    index = bisect.bisect_right(LENGTH_BASES, length) - 1
    _literal_length(writer, 257 + index)
    writer.bits(length - LENGTH_BASES[index], LENGTH_EXTRA[index])
    index = bisect.bisect_right(DISTANCE_BASES, distance) - 1
    writer.code(index, 5)
    writer.bits(distance - DISTANCE_BASES[index], DISTANCE_EXTRA[index])


def deflate(data: bytes) -> bytes:
    """A raw DEFLATE stream of ``data``: one final block, fixed codes, at each position the
    longest earlier match of at least MIN_MATCH bytes (the nearest of equal length)."""
    writer = _BitWriter()
    writer.bits(1, 1)  # BFINAL
    writer.bits(1, 2)  # BTYPE 01: fixed Huffman codes
    seen: dict[bytes, list[int]] = {}  # 3-byte prefix -> positions, oldest first
    size, at = len(data), 0

    def remember(position: int) -> None:
        if position + MIN_MATCH <= size:
            seen.setdefault(data[position : position + MIN_MATCH], []).append(position)

    while at < size:
        best_length, best_distance = 0, 0
        limit = min(MAX_MATCH, size - at)
        if limit >= MIN_MATCH:
            for earlier in reversed(seen.get(data[at : at + MIN_MATCH], [])[-MAX_CANDIDATES:]):
                if at - earlier > WINDOW:
                    break
                length = MIN_MATCH
                while length < limit and data[earlier + length] == data[at + length]:
                    length += 1
                if length > best_length:
                    best_length, best_distance = length, at - earlier
                    if length == limit:
                        break
        if best_length:
            _match(writer, best_length, best_distance)
            for position in range(at, at + best_length):
                remember(position)
            at += best_length
        else:
            _literal_length(writer, data[at])
            remember(at)
            at += 1
    _literal_length(writer, END_OF_BLOCK)
    return writer.finish()


def compress(data: bytes) -> bytes:
    """``data`` as a gzip member (RFC 1952): the same bytes for the same input, everywhere."""
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_HEADER + deflate(data) + trailer

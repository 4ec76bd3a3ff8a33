"""gzip whose bytes depend on the input only, never on the zlib the deployer's Python links.

The stack gives EC2 the nodes' user data gzip-compressed (slurmstack.stack.user_data). Pulumi
compares those bytes with the deployed ones: different bytes for the same document would make
a new launch template version, and the instance refresh would replace every node of the pool.
zlib's output is not specified, only its decoding is, and Python builds link different zlibs
(zlib, zlib-ng), so this module writes the stream itself: one DEFLATE block with the fixed
Huffman codes (RFC 1951, 3.2.6) and greedy LZ77 matches, in a gzip member with no name and no
time (RFC 1952). About 40% of the text's size for a cloud-init document (45% in parts); any
gzip reader (cloud-init's, Python's) reads it.

A document may also be written as several members, one per part (``compress_parts``): a gzip
file is a series of members and readers join them (RFC 1952, 2.2). Parts that many documents
share (the first-boot script is in every pool's user data) are then encoded once per process.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Iterable
from functools import lru_cache

WINDOW = 32 * 1024  # the farthest back a match may point (RFC 1951, 2)
MIN_MATCH, MAX_MATCH = 3, 258
# Candidates looked at per position: enough for text, bounded so a long run stays linear.
MAX_CANDIDATES = 64
# Matches are extended this many bytes per comparison before the last few, byte by byte.
COMPARE_STEP = 16

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


def _reversed(code: int, length: int) -> int:
    """A Huffman code as the bit writer takes it: DEFLATE packs a code's most significant bit
    first into a stream otherwise written least significant bit first (RFC 1951, 3.1.1)."""
    return int(format(code, f"0{length}b")[::-1], 2)


def _fixed_literal_length_code(symbol: int) -> tuple[int, int]:
    """(bits, bit count) of a literal/length symbol in the fixed code (RFC 1951, 3.2.6)."""
    if symbol < 144:
        return _reversed(0x30 + symbol, 8), 8
    if symbol < 256:
        return _reversed(0x190 + symbol - 144, 9), 9
    if symbol < 280:
        return _reversed(symbol - 256, 7), 7
    return _reversed(0xC0 + symbol - 280, 8), 8


def _length_code(length: int) -> tuple[int, int]:
    """(bits, bit count) of a match length: its symbol's code, then the extra bits."""
    index = bisect.bisect_right(LENGTH_BASES, length) - 1
    bits, count = _fixed_literal_length_code(257 + index)
    return bits | (length - LENGTH_BASES[index]) << count, count + LENGTH_EXTRA[index]


# Every code the encoder writes, computed once: a document is encoded symbol by symbol, and
# the per-symbol arithmetic was most of its time.
LITERAL_CODES = tuple(_fixed_literal_length_code(symbol) for symbol in range(256))
END_OF_BLOCK_CODE = _fixed_literal_length_code(END_OF_BLOCK)
LENGTH_CODES = {length: _length_code(length) for length in range(MIN_MATCH, MAX_MATCH + 1)}
DISTANCE_CODES = tuple(_reversed(index, 5) for index in range(30))


def _candidates(data: bytes) -> dict[bytes, list[int]]:
    """Every position where MIN_MATCH bytes start, by those bytes, in increasing order. The
    encoder reaches each position after all earlier ones, so the positions before it in its
    list are exactly the earlier occurrences of its prefix."""
    positions: dict[bytes, list[int]] = {}
    for position in range(len(data) - MIN_MATCH + 1):
        positions.setdefault(data[position : position + MIN_MATCH], []).append(position)
    return positions


def deflate(data: bytes) -> bytes:
    """A raw DEFLATE stream of ``data``: one final block, fixed codes, at each position the
    longest earlier match of at least MIN_MATCH bytes (the nearest of equal length), among the
    MAX_CANDIDATES nearest occurrences of its first bytes within the window."""
    out = bytearray()
    pending, pending_bits = 0b011, 3  # BFINAL 1, then BTYPE 01 (fixed Huffman codes)
    positions = _candidates(data)
    size, at = len(data), 0
    while at < size:
        best_length, best_distance = 0, 0
        limit = min(MAX_MATCH, size - at)
        if limit >= MIN_MATCH:
            earlier_ones = positions[data[at : at + MIN_MATCH]]
            before = bisect.bisect_left(earlier_ones, at)
            for earlier in reversed(earlier_ones[max(0, before - MAX_CANDIDATES) : before]):
                if at - earlier > WINDOW:
                    break
                if best_length and data[earlier + best_length] != data[at + best_length]:
                    continue  # it differs within the best match's length: it cannot be longer
                length = MIN_MATCH
                while (
                    length + COMPARE_STEP <= limit
                    and data[earlier + length : earlier + length + COMPARE_STEP]
                    == data[at + length : at + length + COMPARE_STEP]
                ):
                    length += COMPARE_STEP
                while length < limit and data[earlier + length] == data[at + length]:
                    length += 1
                if length > best_length:
                    best_length, best_distance = length, at - earlier
                    if length == limit:
                        break
        if best_length:
            bits, count = LENGTH_CODES[best_length]
            pending |= bits << pending_bits
            pending_bits += count
            index = bisect.bisect_right(DISTANCE_BASES, best_distance) - 1
            pending |= DISTANCE_CODES[index] << pending_bits
            pending_bits += 5
            pending |= (best_distance - DISTANCE_BASES[index]) << pending_bits
            pending_bits += DISTANCE_EXTRA[index]
            at += best_length
        else:
            bits, count = LITERAL_CODES[data[at]]
            pending |= bits << pending_bits
            pending_bits += count
            at += 1
        if pending_bits >= 64:  # whole words out; a symbol adds at most 48 bits
            out += (pending & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")
            pending >>= 64
            pending_bits -= 64
    bits, count = END_OF_BLOCK_CODE
    pending |= bits << pending_bits
    pending_bits += count
    out += pending.to_bytes((pending_bits + 7) // 8, "little")
    return bytes(out)


def compress(data: bytes) -> bytes:
    """``data`` as a gzip member (RFC 1952): the same bytes for the same input, everywhere."""
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_HEADER + deflate(data) + trailer


def compress_parts(parts: Iterable[bytes]) -> bytes:
    """The parts joined, as one gzip member per part: a reader returns their concatenation.
    Each part is encoded on its own (no match reaches into another part), so a part costs the
    same bytes wherever it appears, and one seen before in this process is not encoded again."""
    return b"".join(_member(part) for part in parts)


# Sized for the distinct parts of a 1,000-pool stack (a handful per pool).
@lru_cache(maxsize=8192)
def _member(part: bytes) -> bytes:
    return compress(part)

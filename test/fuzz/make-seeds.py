#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made seed inputs of the fuzz harnesses.

    test/fuzz/make-seeds.py [OUTDIR]      (default: test/fuzz/corpus)

Each harness's input starts with a few control bytes (see the comment at
the top of test/fuzz/fuzz_<name>.c); the seeds here are valid encodings,
LZ4 frames from the `lz4` command of several kinds, and messenger frames,
wrapped in those control bytes.  The committed corpus is these seeds plus
what fuzzing found, minimized with -merge=1 (README, "Testing").
"""
import hashlib
import os
import struct
import subprocess
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus")


def save(harness, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- codec: byte 0 = cuts | kinds << 4, byte 1 = program length ----------
def varint(v):
    b = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        b.append(c | (0x80 if v else 0))
        if not v:
            return bytes(b)


def codec(cuts, prog, body, kinds=0):
    return bytes([len(cuts) | kinds << 4, len(prog)]) + bytes(cuts) + \
        bytes(prog) + body


ints = struct.pack("<BHIQ", 0x81, 0x1234, 0xDEADBEEF, 0x0123456789ABCDEF)
save("codec", codec([], [0, 1, 2, 3], ints))
save("codec", codec([2, 0, 6], [0, 1, 2, 3], ints * 2, kinds=5))
vs = b"".join(varint(v) for v in (0, 1, 127, 128, 300, 2**32, 2**63,
                                  2**64 - 1))
save("codec", codec([], [4], vs))
save("codec", codec([0, 1, 2], [4], vs, kinds=3))
save("codec", codec([], [4], b"\x80" * 9 + b"\x02"))     # overflow
save("codec", codec([], [4], b"\xff" * 11))               # too long
blob = struct.pack("<I", 5) + b"hello" + struct.pack("<I", 0) + \
    struct.pack("<I", 20) + bytes(range(20))
save("codec", codec([], [5], blob))
save("codec", codec([3, 1, 7], [5, 2, 4], blob + varint(99) + ints,
                    kinds=2))
save("codec", codec([], [5], struct.pack("<I", 1000) + b"short"))

# ---- lz4 -------------------------------------------------------------------
content = [
    b"",
    b"hello, bufferlist\n",
    (b"The quick brown fox jumps over the lazy dog. " * 40),
    bytes(i * 7 % 251 for i in range(3000)),
    (b"abcd" * 20000 + bytes(range(256)) * 8),  # > 64 KiB: several blocks
]
variants = [
    [], ["-BD"], ["-BX"], ["--content-size"], ["--no-frame-crc"],
    ["-9"], ["-12", "-BD"], ["--fast=3"], ["-B5", "-BD", "-BX"],
    ["-l"],
]


def lz4(args, data):
    return subprocess.run(["lz4", "-c", "-q"] + args, input=data,
                          check=True, stdout=subprocess.PIPE).stdout


def lz4_dec(cuts, body, group=1, kinds=0, lim=0):
    return bytes([(group - 1) << 1 | kinds << 4, len(cuts) | lim << 4]) + \
        bytes(cuts) + body


frames = []
for i, c in enumerate(content):
    for j, v in enumerate(variants):
        if i in (0, 4) and j not in (0, 1, 3, 8, 9):
            continue
        fr = lz4(v, c)
        frames.append(fr)
        save("lz4", lz4_dec([], fr))
        if len(fr) > 40:
            save("lz4", lz4_dec([10, 0, 30], fr, group=2, kinds=5, lim=8))
# several frames in a row, and a skippable frame between them
skip = struct.pack("<II", 0x184D2A53, 5) + b"skip!"
save("lz4", lz4_dec([], frames[1] + skip + frames[2]))
save("lz4", lz4_dec([6, 2], skip + frames[3] + frames[1], group=3))
# round trip: byte 0 bit 0 set; two option bytes
for c in content[:4]:
    save("lz4", bytes([1, 0, 0, 0]) + c)
    save("lz4", bytes([1 | 3 << 1 | 6 << 4, 2, 12, 4 | 8 | 16 | 32, 5, 60])
         + c)
save("lz4", bytes([1, 0, 8, 1]) + content[2])     # HC level 3, 64 KiB
save("lz4", bytes([1, 0, 0, 64]) + b"x")          # bad block size id
# round trip of a content repeated (option byte 0 / 18 >= 10): many blocks
save("lz4", bytes([1, 0, 18 * 14, 0]) + content[3][:700])
save("lz4", bytes([1, 1, 18 * 12 + 8, 5 | 16 | 32, 200]) + content[2][:900])
save("lz4", bytes([1, 0, 18 * 13 + 5, 8 | 6]) + content[3][:2000])


# ---- msgr ------------------------------------------------------------------
def crc32c(crc, data):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc & 0xFFFFFFFF


def frame(typ, seq, payload, flags=0):
    pre = struct.pack("<IHHQI", 0x314D4C42, typ, flags, seq, len(payload))
    pre += struct.pack("<I", crc32c(0xFFFFFFFF, pre))
    return pre + payload + struct.pack("<I", crc32c(0xFFFFFFFF, payload))


def msgr_raw(cuts, body, group=1, kinds=0, maxp=0):
    return bytes([len(cuts) | kinds << 4, maxp, (group - 1) << 1]) + \
        bytes(cuts) + body


stream = frame(1, 1, b"") + frame(2, 2, b"ping") + \
    frame(3, 3, bytes(range(200)), flags=0x8001)
save("msgr", msgr_raw([], stream))
save("msgr", msgr_raw([0, 4, 23, 1], stream, group=2, kinds=6))
save("msgr", msgr_raw([30], stream, maxp=3))              # over the limit
save("msgr", msgr_raw([], frame(7, 9, b"x" * 100)[:-1] + b"\x00"))
save("msgr", msgr_raw([], b"BLM2" + stream))
bad = bytearray(frame(5, 5, b"abc"))
bad[16] ^= 0x80                                           # header crc
save("msgr", msgr_raw([], bytes(bad) + stream))
# build mode: descriptors (type 2, flags 2, seq, len, corruption, payload)
desc = b""
for k, pl in enumerate([b"", b"hello", bytes(range(64)), b"z" * 200]):
    desc += struct.pack("<HHBBB", k + 1, 0, k + 1, len(pl), 255) + pl
save("msgr", bytes([0, 0, 1]) + desc)
save("msgr", bytes([3 | 2 << 4, 0, 1 | 2 << 1, 5, 17, 2]) + desc)
save("msgr", bytes([0, 0, 1]) + struct.pack("<HHBBB", 1, 0, 1, 5, 3) +
     b"hello" + desc)

# ---- msgr_conn: 8 option bytes, cuts, stream (see fuzz_msgr_conn.c) -----
def conn(opts, cuts, body, build=False):
    return bytes(opts) + bytes([len(cuts) | (16 if build else 0)]) + \
        bytes(cuts) + body


big = b"".join(frame(10 + k, k + 1, bytes((k * 7 + i) & 255
                                          for i in range(60 * k)))
               for k in range(12))
# plain: replies answered at once, peer reads every other round
save("msgr_conn", conn([4, 1, 32, 3 | 1 << 2, 4, 255, 0x55], [], stream))
# backpressure: small max_out, replies 4x the request, the peer rarely reads
save("msgr_conn", conn([0, 2, 64, 2 | 2 << 2, 0x10, 255, 0x01],
                       [40, 7, 100], big))
# deferred replies (max_inflight 2), half-close at the end
save("msgr_conn", conn([8, 2 | 64 | 128, 64, 3 | 3 << 2, 0x24, 255, 0x33],
                       [20, 3], big))
# half-close in the middle of a frame, tiny ring, detach, copy_below 64
save("msgr_conn", conn([1, 1 | 8 | 32 | 128, 64, 0 | 0 << 2, 0x08, 150,
                        0xff], [9], big))
# direct reads (direct_min 32) and aligned payloads, shut at the end
save("msgr_conn", conn([16, 1 | 128, 255, 3 | 1 << 2 | 2 << 5, 0x04, 255,
                        0x0f], [60, 200], big))
save("msgr_conn", conn([16, 2 | 4 | 128, 255, 1 | 2 << 2 | 3 << 5, 0x44,
                        255, 0xaa], [255], big))
# a malformed frame after good ones; a payload over max_payload
save("msgr_conn", conn([4, 1, 32, 3 | 1 << 2, 4, 255, 0x55], [5],
                       stream + bytes(bad) + stream))
save("msgr_conn", conn([4, 0, 4, 3 | 1 << 2, 4, 255, 0x55], [], big))
# build mode: descriptors, one corrupted, long payloads (len byte >= 200)
bdesc = desc + struct.pack("<HHBBB", 9, 1, 9, 203, 255) + b"long" + \
    struct.pack("<HHBBB", 8, 0, 10, 7, 40) + b"corrupt"
save("msgr_conn", conn([2, 1 | 128, 40, 2 | 3 << 2 | 2 << 5, 0x14, 255,
                        0x11], [30, 2], desc, build=True))
save("msgr_conn", conn([2, 2 | 64 | 128, 60, 1 | 1 << 2 | 4 << 5, 0x30,
                        200, 0x81], [11, 90], bdesc, build=True))

# ---- list: a few operation sequences (see fuzz_list.c's step()) -----------
save("list", bytes([0, 0, 0, 40]) + bytes(range(40)) +
     bytes([4, 1, 0, 17, 0, 0, 0, 0, 21, 0, 1, 100, 0, 3]))
save("list", bytes([2, 0, 1, 0, 30, 3, 1, 2] + [0] * 30 +
                   [3, 1, 0, 0, 20, 5, 8, 0, 0, 20, 3, 20]) +
     bytes(range(100)))
save("list", bytes([0, 0, 0, 200]) + b"A" * 200 +
     bytes([12, 0, 0, 10, 10, 13, 0, 0, 9, 12, 2, 11, 0, 0, 15, 0, 0,
            0xe0, 1, 11, 0, 0, 0xe5, 0x41, 12, 0, 0, 12, 12]))

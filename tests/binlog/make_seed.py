#!/usr/bin/env python3
"""Cut a small fuzz seed out of a real binlog file: the magic, the format description, the
GTID list, and the event groups (GTID to GTID) that touch one database; next positions and CRC32s
are rewritten so the seed is a valid binlog on its own.

    make_seed.py SOURCE_BINLOG DATABASE OUT_FILE
"""
import struct
import sys
import zlib


def events(data):
    off = 4
    while off + 19 <= len(data):
        size = struct.unpack_from("<I", data, off + 9)[0]
        yield off, data[off:off + size]
        off += size


def main():
    src, db, out = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
    data = open(src, "rb").read()
    assert data[:4] == b"\xfebin"
    kept, group = [], []

    def flush():
        if any(db in ev[19:200] for ev in group):
            kept.extend(group)

    for _, ev in events(data):
        etype = ev[4]
        if etype in (15, 163):  # format description, GTID list
            kept.append(ev)
        elif etype == 162:  # GTID: a new group
            flush()
            group = [ev]
        elif group:
            group.append(ev)
    flush()
    res = bytearray(b"\xfebin")
    for ev in kept:
        ev = bytearray(ev)
        struct.pack_into("<I", ev, 13, len(res) + len(ev))
        flags = struct.unpack_from("<H", ev, 17)[0]
        if ev[4] == 15:
            struct.pack_into("<H", ev, 17, flags & ~1)  # a closed file
        struct.pack_into("<I", ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])) & 0xFFFFFFFF)
        res += ev
    open(out, "wb").write(res)


main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Send crafted and random malformed RoCEv2 packets at a live device.

usage: storm.py SRC_IP DST_IP COUNT [QPN_LO QPN_HI]

Raw IPv4 packets (IP_HDRINCL) to UDP port 4791 from a spoofable source:
random payloads, truncated headers, bad pad and version fields, wrong
lengths, valid structure with a bad ICRC, and valid ICRC with random
opcodes, PSNs and keys aimed at QPNs in [QPN_LO, QPN_HI] (UD SENDs with a
DETH carry QP1's Q_Key half the time). Bounded by COUNT.
Prints how many packets of each kind were sent.
"""
import random
import socket
import struct
import sys
import zlib

src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
qlo, qhi = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (0, 0xffffff)
rnd = random.Random(4791)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)


def ip_udp(payload, ulen=None, ident=0):
    ulen = 8 + len(payload) if ulen is None else ulen
    udp = struct.pack(">HHHH", 0xc000 | rnd.randrange(0x4000), 4791, ulen, 0)
    tot = 20 + 8 + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, tot, ident, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    return ip, udp


def icrc(ip, udp, body):
    mip = bytearray(ip)
    mip[1] = mip[8] = mip[10] = mip[11] = 0xff
    mudp = bytearray(udp)
    mudp[6] = mudp[7] = 0xff
    mbth = bytearray(body[:12])
    mbth[4] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + bytes(mip) + bytes(mudp) + bytes(mbth) + body[12:])
    return struct.pack("<I", crc & 0xffffffff)


def bth(op, qpn, psn, pad=0, tver=0, ackreq=0, pkey=0xffff):
    return struct.pack(">BBHBBHBBH", op, (pad << 4) | tver, pkey, 0,
                       (qpn >> 16) & 0xff, qpn & 0xffff, ackreq << 7,
                       (psn >> 16) & 0xff, psn & 0xffff)


def ext(op):
    h = b""
    if op in (6, 10, 11, 12):                       # RETH
        h += struct.pack(">QII", rnd.getrandbits(64), rnd.getrandbits(32),
                         rnd.choice([0, 1, 4096, 1 << 20, 0xffffffff]))
    if op in (0x13, 0x14):                          # AtomicETH
        h += struct.pack(">QIQQ", rnd.getrandbits(64), rnd.getrandbits(32),
                         rnd.getrandbits(64), rnd.getrandbits(64))
    if op in (13, 15, 16, 17, 0x12):                # AETH
        h += struct.pack(">I", rnd.getrandbits(32))
    if op == 0x12:                                  # AtomicAckETH
        h += struct.pack(">Q", rnd.getrandbits(64))
    if op in (0x64, 0x65):                          # DETH: QP1's Q_Key or any
        h += struct.pack(">II", rnd.choice([0x80010000, rnd.getrandbits(32)]),
                         rnd.getrandbits(24))
    if op in (3, 5, 9, 11, 0x65):                   # ImmDt
        h += struct.pack(">I", rnd.getrandbits(32))
    return h


kinds = {}
for i in range(count):
    k = rnd.randrange(7)
    qpn = rnd.randint(qlo, qhi)
    op = rnd.choice(list(range(0, 0x15)) + [0x15, 0x64, 0x65, 0x81, 0xff])
    if k == 0:      # random bytes
        body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 80)))
        ip, udp = ip_udp(body)
    elif k == 1:    # truncated inside the headers
        full = bth(op, qpn, rnd.getrandbits(24)) + ext(op)
        body = full[:rnd.randrange(0, len(full))]
        ip, udp = ip_udp(body)
    elif k == 2:    # UDP length says more (or less) than the datagram
        body = bth(op, qpn, rnd.getrandbits(24)) + ext(op) + b"\0" * 8
        ip, udp = ip_udp(body, ulen=rnd.choice([0, 7, 9, 8 + len(body) + 100, 0xffff]))
    elif k == 3:    # bad pad / version / pkey, valid ICRC
        pay = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 64)))
        b = bth(op, qpn, rnd.getrandbits(24), pad=rnd.randrange(4),
                tver=rnd.randrange(16), pkey=rnd.getrandbits(16)) + ext(op) + pay
        ip, udp = ip_udp(b + b"\0" * 4)
        body = b + icrc(ip, udp, b)
    elif k == 4:    # well formed, bad ICRC
        pay = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 64) * 4))
        b = bth(op, qpn, rnd.getrandbits(24)) + ext(op) + pay
        body = b + struct.pack("<I", rnd.getrandbits(32))
        ip, udp = ip_udp(body)
    else:           # well formed, valid ICRC, random fields
        pay = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300) * 4))
        b = bth(op, qpn, rnd.getrandbits(24), ackreq=rnd.randrange(2)) + ext(op) + pay
        ip, udp = ip_udp(b + b"\0" * 4)
        body = b + icrc(ip, udp, b)
    try:
        s.sendto(ip + udp + body, (dst, 0))
        kinds[k] = kinds.get(k, 0) + 1
    except OSError:
        kinds["err"] = kinds.get("err", 0) + 1
print("sent", sum(v for key, v in kinds.items() if key != "err"), kinds)

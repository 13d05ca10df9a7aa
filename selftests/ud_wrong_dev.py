#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A UD datagram is for the QP its QPN names only if it was sent to an
address of that QP's own device: QPNs are module-wide, and a datagram
to another srdma device's address must not reach the QP (tests/ud.sh,
ud_wrong_device).

usage: ud_wrong_dev.py DEV OWN_IP OTHER_IP GIDX
Makes a UD QP on DEV (Q_Key 0x11111111) with one receive posted, then
sends it crafted UD SEND ONLY datagrams from a raw socket: one to
OTHER_IP (another srdma device's address) that must not complete, then
one to OWN_IP that must (every completion field checked)."""
import socket
import struct
import sys
import time
import zlib

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.enums import (IBV_ACCESS_LOCAL_WRITE, IBV_QPS_INIT, IBV_QPS_RTR,
                           IBV_QPS_RTS, IBV_QPT_UD, IBV_WC_GRH, IBV_WC_RECV,
                           IBV_WC_SUCCESS)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE

QKEY = 0x11111111
SRC_QPN = 0x123456


def fail(msg):
    print("# FAIL: " + msg)
    sys.exit(1)


def datagram(dst, src, dqpn, payload):
    """A UD SEND ONLY (opcode 0x64) to @dqpn, with its ICRC."""
    pad = -len(payload) & 3
    bth = bytearray(struct.pack(">BBHII", 0x64, pad << 4, 0xffff,
                                dqpn & 0xffffff, 7))
    body = bytes(bth) + struct.pack(">II", QKEY, SRC_QPN) + payload + \
        b"\0" * pad
    ulen = 8 + len(body) + 4
    udp = struct.pack(">HHHH", 0xc124, 4791, ulen, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0x4792, 0x4000,
                     64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    mip = bytearray(ip)
    mip[1] = mip[8] = mip[10] = mip[11] = 0xff
    mudp = bytearray(udp)
    mudp[6] = mudp[7] = 0xff
    mb = bytearray(body)
    mb[4] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + bytes(mip) + bytes(mudp) + bytes(mb))
    return ip + udp + body + struct.pack("<I", crc)


def main():
    dev, own, other = sys.argv[1], sys.argv[2], sys.argv[3]
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    cap = QPCap(max_send_wr=1, max_recv_wr=2, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    attr = QPAttr()
    attr.qkey = QKEY
    attr.pkey_index = 0
    attr.port_num = 1
    qp.to_rts(attr)
    mr = MR(pd, 4096, IBV_ACCESS_LOCAL_WRITE)
    mr.write(b"\xee" * 4096, 4096)
    qp.post_recv(RecvWR(wr_id=0x77, num_sge=1,
                        sg=[SGE(mr.buf, 40 + 64, mr.lkey)]))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    data = bytes(range(64))

    raw.sendto(datagram(other, other, qp.qp_num, data), (other, 0))
    time.sleep(0.5)
    n, wcs = cq.poll(num_entries=4)
    if n:
        fail("a datagram to %s (another device) completed on %s's QP: "
             "wr_id %#x status %d" % (other, dev, wcs[0].wr_id,
                                       wcs[0].status))
    print("# to %s: nothing received, as wanted" % other)

    raw.sendto(datagram(own, own, qp.qp_num, data), (own, 0))
    end = time.time() + 5
    n = 0
    while not n and time.time() < end:
        n, wcs = cq.poll(num_entries=4)
        time.sleep(0.01)
    if n != 1:
        fail("the datagram to %s (%s's own) did not complete" % (own, dev))
    wc = wcs[0]
    got = (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.src_qp,
           wc.wc_flags & IBV_WC_GRH, wc.imm_data)
    want = (0x77, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + 64, SRC_QPN, IBV_WC_GRH,
            0)
    print("# to %s: wr_id %#x status %d opcode %d byte_len %d src_qp %#x "
          "grh %d imm %d" % ((own,) + got))
    if got != want:
        fail("completion %s, want %s" % (got, want))
    if mr.read(64, 40) != data:
        fail("payload not in place")
    print("# ud_wrong_dev: ok")


main()

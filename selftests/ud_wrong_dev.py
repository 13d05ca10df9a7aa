#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A UD datagram is for the QP its QPN names only if it came to that QP's
own device: sent to one of its addresses and, from a wire, in through
its netdev. QPNs are module-wide; a datagram to another srdma device must
not reach the QP (tests/ud.sh, ud_wrong_device).

usage: ud_wrong_dev.py DEV OWN_IP OWN_IN OTHER_IP OTHER_IN
Makes a UD QP on DEV (Q_Key 0x11111111) with one receive posted, then
sends it crafted UD SEND ONLY datagrams (ICRC and all):
  1. to OTHER_IP (another srdma device's address) from a raw socket,
     through lo: must not complete;
  2. to OWN_IP, but as an Ethernet frame into OTHER_IN (the other
     device's netdev, sent from its veth peer): must not complete;
  3. to OWN_IP as a frame into OWN_IN: must complete, every completion
     field and the bytes checked;
  4. to OWN_IP from an ordinary UDP socket of an unprivileged process
     (uid 65534), through lo: must not complete, DEV's rx_bad_header +1
     and rx_bad_icrc unchanged (the ICRC was right);
  5. a MAD (QPN 1, the privileged Q_Key) to OWN_IP in through OTHER_IN:
     DEV's GSI QP must not get it (DEV's rx_packets unchanged);
  6. the same MAD in through OWN_IN: DEV's GSI QP gets it (rx_packets +1);
  7. the same MAD from the unprivileged UDP socket through lo: DEV's GSI
     QP must not get it.
Each case prints what it saw; the script fails on the first miss.
OWN_IN and OTHER_IN are veth devices whose peers are OWN_IN's name with
its last digit plus one (v2 -> v3, v0 -> v1)."""
import os
import socket
import struct
import subprocess
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.enums import (IBV_ACCESS_LOCAL_WRITE, IBV_QPS_INIT, IBV_QPS_RTR,
                           IBV_QPS_RTS, IBV_QPT_UD, IBV_WC_GRH, IBV_WC_RECV,
                           IBV_WC_SUCCESS)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE
from rocev2 import icrc

QKEY = 0x11111111
GSI_QKEY = 0x80010000
SRC_QPN = 0x123456
NOBODY = 65534


def fail(msg):
    print("# FAIL: " + msg)
    sys.exit(1)


def ip_csum(h):
    s = sum(struct.unpack(">10H", h))
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def datagram(dst, src, dqpn, payload, qkey=QKEY, ipid=0x4792, sport=0xc124,
             udp_only=False):
    """A UD SEND ONLY (opcode 0x64) to @dqpn, IP header first, ICRC last;
    with @udp_only, what a UDP socket sends (BTH to ICRC), the ICRC over
    the IP header the kernel will build (ID @ipid, DF, from port @sport)."""
    pad = -len(payload) & 3
    bth = bytearray(struct.pack(">BBHII", 0x64, pad << 4, 0xffff,
                                dqpn & 0xffffff, 7))
    body = bytes(bth) + struct.pack(">II", qkey, SRC_QPN) + payload + \
        b"\0" * pad
    ulen = 8 + len(body) + 4
    udp = struct.pack(">HHHH", sport, 4791, ulen, 0)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, ipid,
                               0x4000, 64, 17, 0, socket.inet_aton(src),
                               socket.inet_aton(dst)))
    struct.pack_into(">H", ip, 10, ip_csum(bytes(ip)))
    if udp_only:
        return body + icrc(ip, udp, body)
    return bytes(ip) + udp + body + icrc(ip, udp, body)


def unprivileged_send(ip, payload):
    """Send @payload (BTH to ICRC) from port 0xc125 of @ip to @ip:4791
    through an ordinary UDP socket, as uid NOBODY: an unconnected socket
    that does path MTU discovery (IP_PMTUDISC_DO, which anyone may set)
    sends DF and IP ID 0, which datagram(..., ipid=0) assumed."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER, DO
            s.bind((ip, 0xc125))
            s.sendto(payload, (ip, 4791))
            os._exit(0)
        except Exception as e:  # noqa: BLE001 (report, then fail)
            print("# unprivileged send: %s" % e)
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    if st:
        fail("the unprivileged send failed")


def counter(dev, name):
    time.sleep(0.05)    # the core caches hardware counters for 10 ms
    out = subprocess.run(["rdma", "statistic", "show", "link", dev + "/1"],
                         capture_output=True, text=True, check=True).stdout
    words = out.split()
    return int(words[words.index(name) + 1])


def mad():
    """256 bytes: a PerfMgt (class 4) Get of ClassPortInfo."""
    return struct.pack(">BBBBHHQHHI", 1, 4, 1, 1, 0, 0, 0x5eed, 1, 0, 0) + \
        b"\0" * 232


def mac(ifname):
    with open("/sys/class/net/%s/address" % ifname) as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def peer_of(ifname):
    return ifname[:-1] + str(int(ifname[-1]) + 1)


def frame_into(ifname, ipdg):
    """Send IPv4 datagram @ipdg as a frame from @ifname's veth peer, so
    that it comes in through @ifname."""
    peer = peer_of(ifname)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((peer, 0))
    s.send(mac(ifname) + mac(peer) + b"\x08\x00" + ipdg)
    s.close()


def poll_one(cq, secs):
    end = time.time() + secs
    while time.time() < end:
        n, wcs = cq.poll(num_entries=4)
        if n:
            return n, wcs
        time.sleep(0.01)
    return 0, []


def main():
    dev, own = sys.argv[1], sys.argv[2]
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
    own_in, other_ip, other_in = sys.argv[3], sys.argv[4], sys.argv[5]
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    data = bytes(range(64))

    raw.sendto(datagram(other_ip, other_ip, qp.qp_num, data), (other_ip, 0))
    n, wcs = poll_one(cq, 0.5)
    if n:
        fail("a datagram to %s (another device) completed on %s's QP: "
             "wr_id %#x status %d" % (other_ip, dev, wcs[0].wr_id,
                                       wcs[0].status))
    print("# to %s through lo: nothing received, as wanted" % other_ip)

    # From the other device's network: the source is its peer's.
    src = other_ip[:other_ip.rindex(".")] + ".2"
    frame_into(other_in, datagram(own, src, qp.qp_num, data))
    n, wcs = poll_one(cq, 0.5)
    if n:
        fail("a datagram to %s in through %s (another device's netdev) "
             "completed on %s's QP" % (own, other_in, dev))
    print("# to %s in through %s: nothing received, as wanted"
          % (own, other_in))

    src = own[:own.rindex(".")] + ".2"
    frame_into(own_in, datagram(own, src, qp.qp_num, data))
    n, wcs = poll_one(cq, 5)
    if n != 1:
        fail("the datagram to %s in through %s (%s's own) did not "
             "complete" % (own, own_in, dev))
    wc = wcs[0]
    got = (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.src_qp,
           wc.wc_flags & IBV_WC_GRH, wc.imm_data)
    want = (0x77, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + 64, SRC_QPN, IBV_WC_GRH,
            0)
    print("# to %s in through %s: wr_id %#x status %d opcode %d byte_len %d "
          "src_qp %#x grh %d imm %d" % ((own, own_in) + got))
    if got != want:
        fail("completion %s, want %s" % (got, want))
    if mr.read(64, 40) != data:
        fail("payload not in place")

    other_src = other_ip[:other_ip.rindex(".")] + ".2"
    own_src = own[:own.rindex(".")] + ".2"
    qp.post_recv(RecvWR(wr_id=0x78, num_sge=1,
                        sg=[SGE(mr.buf, 40 + 64, mr.lkey)]))
    hdr, bad_icrc = counter(dev, "rx_bad_header"), counter(dev, "rx_bad_icrc")
    unprivileged_send(own, datagram(own, own, qp.qp_num, data, ipid=0,
                                    sport=0xc125, udp_only=True))
    n, wcs = poll_one(cq, 0.5)
    if n:
        fail("a datagram from an unprivileged UDP socket through lo "
             "completed on %s's QP" % dev)
    got = (counter(dev, "rx_bad_header") - hdr,
           counter(dev, "rx_bad_icrc") - bad_icrc)
    print("# to %s from uid %d through lo: nothing received, "
          "rx_bad_header +%d, rx_bad_icrc +%d" % ((own, NOBODY) + got))
    if got != (1, 0):
        fail("want rx_bad_header +1 and rx_bad_icrc +0")

    rx = counter(dev, "rx_packets")
    frame_into(other_in, datagram(own, other_src, 1, mad(), qkey=GSI_QKEY))
    time.sleep(0.3)
    if counter(dev, "rx_packets") != rx:
        fail("a MAD to %s in through %s reached %s's GSI QP"
             % (own, other_in, dev))
    print("# MAD to %s in through %s: not taken, as wanted"
          % (own, other_in))
    frame_into(own_in, datagram(own, own_src, 1, mad(), qkey=GSI_QKEY))
    time.sleep(0.3)
    if counter(dev, "rx_packets") != rx + 1:
        fail("the MAD to %s in through %s did not reach %s's GSI QP"
             % (own, own_in, dev))
    print("# MAD to %s in through %s: taken by the GSI QP" % (own, own_in))
    rx += 1
    unprivileged_send(own, datagram(own, own, 1, mad(), qkey=GSI_QKEY,
                                    ipid=0, sport=0xc125, udp_only=True))
    time.sleep(0.3)
    if counter(dev, "rx_packets") != rx:
        fail("a MAD from uid %d through lo reached %s's GSI QP"
             % (NOBODY, dev))
    print("# MAD to %s from uid %d through lo: not taken, as wanted"
          % (own, NOBODY))
    print("# ud_wrong_dev: ok")


main()

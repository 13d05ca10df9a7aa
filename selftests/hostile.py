#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A hostile RoCEv2 peer: valid-looking but adversarial packet sequences.

usage: hostile.py NETNS TEST GIDX

Starts srdma_target (one RC QP on $SRDMA_DEV, default srdma0, at
10.0.0.1; a UC QP for the tests named uc_*, an XRC receive QP with two XRC
SRQs for those named xrc_*) in the current namespace, connected to a peer QP that does not
exist: this script, which then enters network namespace NETNS (10.0.0.2),
speaks RoCEv2 itself over a raw IPv4 socket (ICRC computed here), listens
on UDP 4791 for what the QP answers, and asserts the QP's answers, state,
completions and memory. Exit status 0 only if every assertion holds.
"""
import ctypes
import os
import socket
import struct
import subprocess
import sys
import time

from rocev2 import icrc

SRC, DST = "10.0.0.2", "10.0.0.1"
PEER_QPN, NEW_QPN = 0x7777, 0x7778
RQ_PSN = 0x1000
MTU = 1024

OP = dict(SEND_FIRST=0, SEND_MIDDLE=1, SEND_LAST=2, SEND_ONLY=4,
          WRITE_FIRST=6, WRITE_MIDDLE=7, WRITE_LAST=8, WRITE_LAST_IMM=9,
          WRITE_ONLY=10, WRITE_ONLY_IMM=11, READ_REQ=12, ACK=0x11,
          ATOMIC_ACK=0x12, CMP_SWAP=0x13, FETCH_ADD=0x14,
          SEND_LAST_INV=0x16, SEND_ONLY_INV=0x17, ATOMIC_WRITE=0x1d,
          READ_RESP_ONLY=16)
READ_RESP = (13, 14, 15, 16)
SYN_ACK, SYN_RNR, SYN_NAK = 0x00, 0x20, 0x60
NAK_SEQ, NAK_INV, NAK_ACC = 0x60, 0x61, 0x62
QPS_RTS, QPS_ERR = 3, 6
WC_RECV_RDMA_WITH_IMM, WC_WITH_IMM, WC_FLUSH = 129, 2, 5
WC_RECV = 128
UC = 0x20                           # the UC group: UC | an RC opcode
XRC = 0xa0                          # the XRC group: XRC | an RC opcode
WC_REM_INV_REQ = 9


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Target:
    """srdma_target, driven over its stdin/stdout."""

    def __init__(self, gidx, uc=False, xrc=False, timeout=None, odp=False):
        self.p = subprocess.Popen(
            ["srdma_target", "-d", os.environ.get("SRDMA_DEV", "srdma0"),
             "-g", str(gidx), "-r", SRC, "-q", str(PEER_QPN)] +
            (["-u"] if uc else []) + (["-x"] if xrc else []) +
            (["-t", str(timeout)] if timeout else []) +
            (["-o"] if odp else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        hello = self.p.stdout.readline().split()
        if not hello:
            fail("srdma_target did not start")
        kv = dict(x.split("=") for x in hello)
        self.qpn, self.rkey = int(kv["qpn"]), int(kv["rkey"])
        self.addr, self.len = int(kv["addr"]), int(kv["len"])
        self.srqa, self.srqb = int(kv.get("srqa", 0)), int(kv.get("srqb", 0))

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().strip()
        print("# target:", line, "->", out[:100])
        return out

    def poll(self):
        self.p.stdin.write("poll\n")
        self.p.stdin.flush()
        wcs = []
        while True:
            line = self.p.stdout.readline().strip()
            if line == "end" or not line:
                return wcs
            print("# target:", line)
            wcs.append({k: int(v) for k, v in
                        (x.split("=") for x in line.split()[1:])})

    def state(self):
        out = self.cmd("state")
        if not out.startswith("state="):
            fail("state: " + out)
        st, _, ev = out.partition(" events=")
        return int(st[len("state="):]), ev

    def quit(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.p.kill()


def enter_netns(name):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:     # CLONE_NEWNET
        fail("setns: errno %d" % ctypes.get_errno())
    os.close(fd)


class Wire:
    """Send requests from PEER_QPN; receive what the target sends back."""

    def __init__(self, dqpn):
        self.dqpn = dqpn
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                 socket.IPPROTO_RAW)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 4791))

    def send(self, op, psn, payload=b"", va=None, rkey=None, dmalen=None,
             imm=None, ackreq=False, dqpn=None, atomic=None, srqn=None):
        """With srqn, an XRC request: XRC | op, an XRCETH naming srqn."""
        pad = -len(payload) & 3
        if srqn is not None:
            op |= XRC
        b = struct.pack(">BBHBBHBBH", op, pad << 4, 0xffff, 0,
                        0, 0, 0x80 if ackreq else 0, 0, 0)
        b = bytearray(b)
        struct.pack_into(">I", b, 4, (dqpn if dqpn is not None else self.dqpn) & 0xffffff)
        struct.pack_into(">I", b, 8, (0x80000000 if ackreq else 0) | (psn & 0xffffff))
        if srqn is not None:
            b += struct.pack(">I", srqn & 0xffffff)
        if atomic is not None:      # AtomicETH: (va, rkey, swap_add, cmp)
            b += struct.pack(">QIQQ", *atomic)
        elif va is not None:
            b += struct.pack(">QII", va, rkey, dmalen)
        if imm is not None:
            b += struct.pack(">I", imm)
        b += payload + b"\0" * pad
        ulen = 8 + len(b) + 4
        udp = struct.pack(">HHHH", 0xc123, 4791, ulen, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0x4791, 0x4000,
                         64, 17, 0, socket.inet_aton(SRC), socket.inet_aton(DST))
        self.raw.sendto(ip + udp + bytes(b) + icrc(ip, udp, b), (DST, 0))

    def recv(self, timeout):
        """Next packet from the target as a dict, or None."""
        self.udp.settimeout(timeout)
        try:
            d = self.udp.recv(65536)
        except socket.timeout:
            return None
        pkt = {"op": d[0], "dqpn": struct.unpack(">I", d[4:8])[0] & 0xffffff,
               "psn": struct.unpack(">I", d[8:12])[0] & 0xffffff,
               "ackreq": bool(d[8] & 0x80),
               "xrc": d[0] & 0xe0 == XRC}
        if pkt["xrc"]:              # XRC answers: RC's in the XRC group
            pkt["op"] &= 0x1f
        if pkt["op"] in (OP["ACK"], OP["ATOMIC_ACK"], 13, 15, 16):
            pkt["syn"] = d[12]
            pkt["msn"] = struct.unpack(">I", d[12:16])[0] & 0xffffff
        if pkt["op"] == OP["ATOMIC_ACK"] and len(d) >= 24:
            pkt["orig"] = struct.unpack(">Q", d[16:24])[0]
        if pkt["op"] in READ_RESP:  # the payload: after any AETH, to the pad
            pkt["data"] = d[12 + (4 if "syn" in pkt else 0):
                            len(d) - 4 - ((d[1] >> 4) & 3)]
        return pkt

    def expect_ack(self, psn, timeout=5.0):
        """The first ACK/NAK for @psn: its syndrome, or None."""
        end = time.time() + timeout
        while time.time() < end:
            p = self.recv(max(0.01, end - time.time()))
            if p and p["op"] == OP["ACK"] and p["psn"] == psn:
                return p["syn"]
        return None

    def drain(self, secs):
        pkts, end = [], time.time() + secs
        while time.time() < end:
            p = self.recv(max(0.01, end - time.time()))
            if p:
                pkts.append(p)
        return pkts


def syn_str(s):
    return "none" if s is None else "%#x" % s


def expect_syn(w, psn, want, what):
    s = w.expect_ack(psn)
    if s is None or (s != want if want not in (SYN_RNR,) else s & 0xe0 != SYN_RNR):
        fail("%s: answer to psn %#x was %s, want %#x" % (what, psn, syn_str(s), want))


def expect_state(t, want, event=None):
    st, ev = t.state()
    if st != want:
        fail("QP state %d, want %d (events %s)" % (st, want, ev))
    if event and event not in ev:
        fail("async events %s, want one with '%s'" % (ev, event))


def t_write_key_reuse(t, w):
    """Defect 1: a WRITE's later packets after its MR's key was reused."""
    p = RQ_PSN
    w.send(OP["WRITE_FIRST"], p, b"\xaa" * MTU, va=t.addr + 32768,
           rkey=t.rkey, dmalen=3 * MTU)
    if t.cmd("dereg") != "ok":
        fail("dereg")
    if not t.cmd("reuse %d" % t.rkey).startswith("ok"):
        fail("no MR got the old key back (module loaded with max_mr=4?)")
    w.send(OP["WRITE_MIDDLE"], p + 1, b"\xbb" * MTU, ackreq=True)
    expect_syn(w, p + 1, NAK_ACC, "WRITE_MIDDLE into a reused key")
    expect_state(t, QPS_ERR, "access")
    if t.cmd("dump 0 4096") != "00" * 4096:
        fail("the new MR was written")


def t_write_imm_no_recv(t, w):
    """Defect 2: multi-packet WRITE with immediate and no receive posted."""
    p, data = RQ_PSN, bytes(range(256)) * 12
    w.send(OP["WRITE_FIRST"], p, data[:MTU], va=t.addr, rkey=t.rkey,
           dmalen=3 * MTU)
    w.send(OP["WRITE_MIDDLE"], p + 1, data[MTU:2 * MTU])
    w.send(OP["WRITE_LAST_IMM"], p + 2, data[2 * MTU:], imm=0x12345678,
           ackreq=True)
    expect_syn(w, p + 2, SYN_RNR, "WRITE_LAST_IMM without a receive")
    if t.poll():
        fail("a completion without a receive")
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    w.send(OP["WRITE_LAST_IMM"], p + 2, data[2 * MTU:], imm=0x12345678,
           ackreq=True)
    # ACKed with 0 credits: its one receive taken.
    expect_syn(w, p + 2, SYN_ACK | 0, "WRITE_LAST_IMM with a receive")
    wcs = t.poll()
    want = {"wr_id": 0x100, "status": 0, "opcode": WC_RECV_RDMA_WITH_IMM,
            "byte_len": 3 * MTU, "imm": 0x12345678, "wc_flags": WC_WITH_IMM,
            "src_qp": PEER_QPN, "qp_num": t.qpn}
    if wcs != [want]:
        fail("completions %s, want [%s]" % (wcs, want))
    if t.cmd("dump 0 %d" % len(data)) != data.hex():
        fail("WRITE data not in place")
    expect_state(t, QPS_RTS)


def t_read_reset(t, w):
    """Defect 3: READ responses must stop at a reset and not reach a new peer."""
    p, n = RQ_PSN, t.len // MTU
    for i in range(4):
        w.send(OP["READ_REQ"], p + i * n, va=t.addr, rkey=t.rkey,
               dmalen=t.len, ackreq=True)
    first = None
    end = time.time() + 10
    while first is None and time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] in READ_RESP:
            first = q
    if not first:
        fail("no READ response at all")
    if t.cmd("reconnect %d" % NEW_QPN) != "ok":
        fail("reconnect")
    late = [q for q in w.drain(2.0) if q["op"] in READ_RESP and
            q["dqpn"] == NEW_QPN]
    print("# READ responses to the new peer after the reset:", len(late))
    if late:
        fail("%d responses of the old READs went to the new peer" % len(late))
    expect_state(t, QPS_RTS)
    # The new connection works: a WRITE from the new peer is ACKed.
    w.send(OP["WRITE_ONLY"], RQ_PSN, b"\x5a" * 8, va=t.addr, rkey=t.rkey,
           dmalen=8, ackreq=True, dqpn=t.qpn)
    end = time.time() + 5
    while time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] == OP["ACK"] and q["dqpn"] == NEW_QPN:
            if q["syn"] != SYN_ACK | 0:     # no receive: 0 credits
                fail("WRITE on the new connection: syndrome %#x" % q["syn"])
            break
    else:
        fail("no ACK on the new connection")
    if t.cmd("dump 0 8") != "5a" * 8:
        fail("WRITE on the new connection not placed")


def t_ack_behind_read(t, w):
    """An ACK never overtakes READ responses queued before it, and never
    names a READ accepted after it: READ A (8 responses, queued), WRITE W
    asking for an ACK, READ B (1 response). W's ACK comes after A's last
    response, for W's own PSN, and no plain ACK names B."""
    p = RQ_PSN
    w.send(OP["READ_REQ"], p, va=t.addr, rkey=t.rkey, dmalen=8 * MTU,
           ackreq=True)
    w.send(OP["WRITE_ONLY"], p + 8, b"\x77" * 8, va=t.addr + 65536,
           rkey=t.rkey, dmalen=8, ackreq=True)
    w.send(OP["READ_REQ"], p + 9, va=t.addr, rkey=t.rkey, dmalen=8,
           ackreq=True)
    got = [(q["op"], q["psn"]) for q in w.drain(3.0)]
    print("# answers:", got)
    resp = [psn for op, psn in got if op in READ_RESP]
    acks = [(i, psn) for i, (op, psn) in enumerate(got) if op == OP["ACK"]]
    if sorted(resp) != list(range(p, p + 8)) + [p + 9]:
        fail("READ responses %s" % resp)
    if [psn for _, psn in acks] != [p + 8]:
        fail("ACKs for %s, want one for the WRITE (%#x)"
             % ([hex(psn) for _, psn in acks], p + 8))
    last_a = max(i for i, (op, psn) in enumerate(got)
                 if op in READ_RESP and psn == p + 7)
    if acks[0][0] < last_a:
        fail("the WRITE's ACK overtook READ A's responses")
    if t.cmd("dump 65536 8") != "77" * 8:
        fail("the WRITE was not placed")
    expect_state(t, QPS_RTS)


def t_dup_ack_before_read(t, w):
    """A duplicate WRITE is ACKed for its own PSN, never for a READ accepted
    after it: rdma_rxe's requester completes a READ, without its data, on
    a plain ACK at the READ's PSN (rping over 5% loss saw stale data).
    WRITE W (ACKed), READ R (answered), W again: its ACK names W."""
    p = RQ_PSN
    w.send(OP["WRITE_ONLY"], p, b"\x66" * 8, va=t.addr + 65536,
           rkey=t.rkey, dmalen=8, ackreq=True)
    expect_syn(w, p, SYN_ACK | 0, "WRITE W")
    w.send(OP["READ_REQ"], p + 1, va=t.addr, rkey=t.rkey, dmalen=8,
           ackreq=True)
    got = [(q["op"], q["psn"]) for q in w.drain(1.0)]
    if got != [(OP["READ_RESP_ONLY"], p + 1)]:
        fail("READ R answered with %s" % got)
    w.send(OP["WRITE_ONLY"], p, b"\x55" * 8, va=t.addr + 65536,
           rkey=t.rkey, dmalen=8, ackreq=True)
    got = [(q["op"], q["psn"], q["syn"]) for q in w.drain(1.0)]
    print("# answers to the duplicate:", got)
    if got != [(OP["ACK"], p, SYN_ACK | 0)]:
        fail("duplicate WRITE answered with %s, want one ACK for %#x"
             % (got, p))
    if t.cmd("dump 65536 8") != "66" * 8:
        fail("the duplicate WRITE was executed")
    expect_state(t, QPS_RTS)


def t_read_huge(t, w):
    """Defect 6: a READ above the message limit is an invalid request."""
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey,
           dmalen=0x80001000, ackreq=True)
    expect_syn(w, RQ_PSN, NAK_INV, "READ of 2 GiB + 4 KiB")
    expect_state(t, QPS_ERR, "invalid request")


def t_middle_without_first(t, w):
    """MIDDLE and LAST_IMM packets with no FIRST: invalid request, no receive."""
    if t.cmd("recv 2") != "ok":
        fail("post_recv")
    w.send(OP["WRITE_LAST_IMM"], RQ_PSN, b"\x11" * 64, imm=7, ackreq=True)
    expect_syn(w, RQ_PSN, NAK_INV, "WRITE_LAST_IMM without FIRST")
    expect_state(t, QPS_ERR, "invalid request")
    wcs = t.poll()
    if [(c["wr_id"], c["status"], c["qp_num"]) for c in wcs] != \
            [(0x100, WC_FLUSH, t.qpn), (0x101, WC_FLUSH, t.qpn)]:
        fail("completions %s, want two flushed receives" % wcs)


def t_psn_edges(t, w):
    """PSNs at the edges of the window: NAK or duplicate, never executed."""
    far = (RQ_PSN + 0x7fffff) & 0xffffff
    w.send(OP["WRITE_ONLY"], far, b"\x22" * 8, va=t.addr, rkey=t.rkey,
           dmalen=8, ackreq=True)
    expect_syn(w, RQ_PSN, NAK_SEQ, "PSN 2^23-1 ahead")
    old = (RQ_PSN + 0x800000) & 0xffffff
    w.send(OP["WRITE_ONLY"], old, b"\x33" * 8, va=t.addr, rkey=t.rkey,
           dmalen=8, ackreq=True)
    expect_syn(w, (RQ_PSN - 1) & 0xffffff, SYN_ACK | 0, "PSN 2^23 behind")
    if t.cmd("dump 0 8") != "00" * 8:
        fail("an out-of-window WRITE was executed")
    w.send(OP["WRITE_ONLY"], RQ_PSN, b"\x44" * 8, va=t.addr, rkey=t.rkey,
           dmalen=8, ackreq=True)
    expect_syn(w, RQ_PSN, SYN_ACK | 0, "the expected PSN")
    if t.cmd("dump 0 8") != "44" * 8:
        fail("the in-window WRITE was not placed")
    expect_state(t, QPS_RTS)


def t_bad_rkey(t, w):
    """Defect 11: a remote access error NAKs and puts the responder in ERR."""
    w.send(OP["WRITE_ONLY"], RQ_PSN, b"\x55" * 8, va=t.addr,
           rkey=t.rkey ^ 0x80, dmalen=8, ackreq=True)
    expect_syn(w, RQ_PSN, NAK_ACC, "WRITE with a bad rkey")
    expect_state(t, QPS_ERR, "access")
    if t.cmd("dump 0 8") != "00" * 8:
        fail("a WRITE with a bad rkey was placed")



def t_dup_read_kills(t, w):
    """A spoofed READ with an old PSN and a bad rkey: no NAK, QP unharmed."""
    old = (RQ_PSN - 12345) & 0xffffff
    w.send(OP["READ_REQ"], old, va=t.addr, rkey=t.rkey ^ 0x80,
           dmalen=64, ackreq=True)
    s = w.expect_ack(old, timeout=2.0)
    st, ev = t.state()
    print("# dup READ bad rkey: answer %s, state %d, events %s" % (syn_str(s), st, ev))
    if st != QPS_RTS:
        fail("a duplicate-PSN READ moved the QP to state %d" % st)
    if s is not None:
        fail("a READ matching no accepted READ was answered %s" % syn_str(s))


def t_dup_read_amplify(t, w):
    """A READ behind the expected PSN that matches no accepted READ: dropped."""
    old = (RQ_PSN - 0x400000) & 0xffffff
    w.send(OP["READ_REQ"], old, va=t.addr, rkey=t.rkey,
           dmalen=t.len, ackreq=True)
    got = [q for q in w.drain(3.0) if q["op"] in READ_RESP]
    print("# READ responses to a never-accepted duplicate READ: %d" % len(got))
    st, ev = t.state()
    if got:
        fail("%d READ responses for a READ never accepted" % len(got))


def t_send_stall(t, w):
    """A request whose first packet found no route is not forgotten: it is
    sent once the route is back, or fails with a retry error; it never sits
    in RTS with nothing in flight and no timer."""
    root = ["nsenter", "--net=/proc/1/ns/net"]
    if t.cmd("send 64") != "ok":
        fail("post_send")
    q, end = None, time.time() + 5
    while time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] == OP["SEND_ONLY"]:
            break
    else:
        fail("first SEND never arrived")
    w.send(OP["ACK"], q["psn"], b"\x1f\x00\x00\x01")
    time.sleep(0.5)
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != [(0x200, 0)]:
        fail("first SEND: completions %s" % wcs)
    subprocess.check_call(root + ["ip", "link", "set", "v0", "down"])
    if t.cmd("send 64") != "ok":
        fail("post_send 2")
    time.sleep(0.3)
    subprocess.check_call(root + ["ip", "link", "set", "v0", "up"])
    # ACK the first resend at once. Retries are 268 ms apart (main()):
    # eight of them outlast the 0.3 s down with seconds to spare, so the
    # SEND is resent after the link is up, and then completes. With 67 ms
    # one CI run's guest brought the link up so late that the resend the
    # test saw was the last, and its ACK came after the final timeout.
    got, end = [], time.time() + 4
    while not got and time.time() < end:
        p = w.recv(0.2)
        if p and p["op"] == OP["SEND_ONLY"]:
            got.append(p)
            w.send(OP["ACK"], p["psn"], b"\x1f\x00\x00\x02")
    print("# SENDs after the link came back: %d" % len(got))
    if got:
        time.sleep(0.5)
        want = [(0x200, 0)]
    else:
        want = [(0x200, 12)]    # IBV_WC_RETRY_EXC_ERR: retries ran out
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != want:
        fail("SEND posted with no route: completions %s, want %s" % (wcs, want))


FILL_MAGIC = 0x5352444d00000000
TRACE = "/sys/kernel/tracing"
QUEUE_EV = TRACE + "/events/workqueue/workqueue_queue_work/enable"


def filled(off, n):
    """The bytes [off, off + n) of the target's MR after "fill"."""
    return struct.pack("<%dQ" % (n // 8),
                       *(o ^ FILL_MAGIC for o in range(off, off + n, 8)))


def trace_queue_work(on):
    """Trace (True) or stop tracing and return what was queued. The test VM
    enables the event at boot (scripts/vm/run's trace_event=): enabling a
    tracepoint patches kernel text, waiting on every other CPU, and one
    full check's guest hung in a soft lockup of this test's python3 right
    at its start. Elsewhere it is enabled here, and left enabled."""
    if on:
        if not os.path.ismount(TRACE):
            subprocess.check_call(["mount", "-t", "tracefs", "none", TRACE])
        with open(QUEUE_EV) as fh:
            enabled = fh.read().strip() == "1"
        writes = [("tracing_on", "0"), ("buffer_size_kb", "4096"),
                  ("trace", "")]
        if not enabled:
            writes.append((QUEUE_EV[len(TRACE) + 1:], "1"))
        for f, v in writes + [("tracing_on", "1")]:
            with open(TRACE + "/" + f, "w") as fh:
                fh.write(v)
        return None
    with open(TRACE + "/tracing_on", "w") as fh:
        fh.write("0")
    with open(TRACE + "/trace") as fh:
        lines = [x for x in fh if "function=srdma_read_work" in x]
    with open(TRACE + "/trace", "w") as fh:
        fh.write("")
    return lines


def recv_upto(w, n, secs=60):
    """Up to @n packets, each within 5 s of the last, all within @secs."""
    got, end = [], time.time() + secs
    while len(got) < n and time.time() < end:
        q = w.recv(5.0)
        if q is None:
            break
        got.append(q)
    return got


def expect_reads(got, psn, counts):
    """@got answers READs of the MR from its first byte, of @counts[i]
    packets each, their PSNs from @psn on: READ responses only, each once,
    in PSN order, FIRST, MIDDLE, LAST (ONLY alone), each with the MR's
    bytes (filled()) at its offset."""
    others = [q for q in got if q["op"] not in READ_RESP]
    resp = [q for q in got if q["op"] in READ_RESP]
    if others:
        fail("other packets: %s" % others[:3])
    total = sum(counts)
    if [q["psn"] for q in resp] != [psn + i for i in range(total)]:
        dup = len(resp) - len(set(q["psn"] for q in resp))
        fail("responses not in PSN order, or missing: %d of %d, "
             "%d twice" % (len(resp), total, dup))
    want = []
    for n in counts:
        ops = [16] if n == 1 else [13] + [14] * (n - 2) + [15]
        want += [(op, i * MTU) for i, op in enumerate(ops)]
    for i, q in enumerate(resp):
        op, off = want[i]
        data = filled(off, MTU)
        if q["op"] != op or q["data"] != data:
            fail("response %d: opcode %d, %d bytes, data %s" %
                 (i, q["op"], len(q["data"]),
                  "right" if q["data"] == data else "wrong"))


def t_odp_read_long(t, w):
    """READs of an MR registered on demand, none of its pages mapped for
    the device yet. First 300 KiB: one fault maps exactly those. Then the
    whole 4 MiB (4096 responses, one request): the read work stops for a
    fault at 300 KiB and at each MiB after it (SRDMA_READ_ODP_SPAN), each
    time in the middle of a run of its budget (64 responses: its last
    budget stop was at 256 KiB), and goes on where the fault stopped it:
    not from the READ's start, nor from where its last budget ended. Every
    response once, in PSN order, with the right opcode and the MR's bytes
    at its offset, and no request asked again."""
    if t.cmd("fill") != "ok":
        fail("fill")
    w.udp.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)     # SO_RCVBUFFORCE
    f0, m0 = hw_counter("odp_faults"), hw_counter("odp_misses")
    psn = RQ_PSN
    for length in (300 << 10, t.len):
        n = length // MTU
        t0 = time.time()
        w.send(OP["READ_REQ"], psn, va=t.addr, rkey=t.rkey, dmalen=length,
               ackreq=True)
        got = recv_upto(w, n)
        print("# READ of %d KiB: %d packets in %.0f ms" %
              (length >> 10, len(got), (time.time() - t0) * 1000))
        expect_reads(got, psn, [n])
        psn += n
    faults = hw_counter("odp_faults") - f0
    misses = hw_counter("odp_misses") - m0
    print("# odp_faults +%d, odp_misses +%d" % (faults, misses))
    # One for the first READ, four stops in the second.
    if faults < 5 or misses < 5:
        fail("odp_faults +%d, odp_misses +%d: want 5 at least" %
             (faults, misses))
    expect_state(t, QPS_RTS)


def t_read_budget(t, w):
    """Three READs of the whole 4 MiB MR back to back (4096 responses
    each, one request each): the read work sends SRDMA_READ_BUDGET (64)
    responses a run and queues itself again, each time on the
    high-priority srdma_tx workqueue and the QP's CPU, and goes on where it
    stopped: every response, in PSN order, with the right opcode and the
    MR's bytes at its offset. Sending for longer than its slice (19 ms)
    without a break, it rests (read_work_rests)."""
    if t.cmd("fill") != "ok":
        fail("fill")
    w.udp.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)     # SO_RCVBUFFORCE
    n, reads = t.len // MTU, 3
    r0 = hw_counter("read_work_rests")
    trace_queue_work(True)
    try:
        t0 = time.time()
        for i in range(reads):
            w.send(OP["READ_REQ"], RQ_PSN + i * n, va=t.addr, rkey=t.rkey,
                   dmalen=t.len, ackreq=True)
        got = recv_upto(w, reads * n)
        took = time.time() - t0
    finally:
        queued = trace_queue_work(False)
    rests = hw_counter("read_work_rests") - r0
    cpus = sorted(set(x.split("req_cpu=")[1].split()[0] for x in queued
                      if "req_cpu=" in x))
    print("# %d packets in %.0f ms; read_work queued %d times, %d not on "
          "srdma_tx, req_cpu %s; read_work_rests +%d" %
          (len(got), took * 1000, len(queued),
           len([x for x in queued if "workqueue=srdma_tx " not in x]), cpus,
           rests))
    expect_reads(got, RQ_PSN, [n] * reads)
    # Queued by the first request, then again after every budget.
    if len(queued) < reads * n // 64:
        fail("read_work queued %d times for %d responses: no budget?" %
             (len(queued), reads * n))
    if any("workqueue=srdma_tx " not in x for x in queued):
        fail("read_work queued elsewhere: %s" %
             [x for x in queued if "workqueue=srdma_tx " not in x][0])
    if len(cpus) != 1 or int(cpus[0]) >= os.cpu_count():
        fail("read_work queued for CPUs %s" % cpus)
    # The work's busy span, from the trace: long enough for a rest on
    # any machine this runs on (TCG: 0.2-0.9 s; a host fast enough to
    # send it all within two slices would prove nothing).
    stamps = [float(x.split(": workqueue_queue_work")[0].split()[-1])
              for x in queued if ": workqueue_queue_work" in x]
    span = (max(stamps) - min(stamps)) * 1000 if stamps else 0
    print("# read work busy for %.0f ms" % span)
    if span > 2 * 19 and rests < 1:
        fail("busy for %.0f ms and the read work never rested" % span)
    expect_state(t, QPS_RTS)


def t_nak_blame(t, w):
    """A NAK for a WRITE behind an unanswered READ fails the WRITE, not the READ."""
    if t.cmd("rdwr 8192") != "ok":
        fail("post_send")
    pk, wr, end = [], [], time.time() + 5
    while not wr and time.time() < end:
        q = w.recv(1.0)
        if q:
            pk.append(q)
            if q["op"] in (OP["WRITE_ONLY"], OP["WRITE_FIRST"]):
                wr.append(q)
    print("# requester sent: %s" % [(q["op"], hex(q["psn"])) for q in pk])
    if not wr:
        fail("no WRITE seen")
    w.send(OP["ACK"], wr[0]["psn"], b"\x62\x00\x00\x00")
    time.sleep(0.5)
    wcs = t.poll()
    got = [(c["wr_id"], c["status"]) for c in wcs]
    print("# completions %s" % got)
    if got != [(0x300, WC_FLUSH), (0x301, 10)]:
        fail("completions %s, want the READ flushed and the WRITE failed" % got)




def t_dup_read_valid(t, w):
    """A READ asked again, from its second response on, is answered again."""
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey, dmalen=4 * MTU,
           ackreq=True)
    first = [q for q in w.drain(2.0) if q["op"] in READ_RESP]
    if [q["psn"] for q in first] != [RQ_PSN + i for i in range(4)]:
        fail("READ responses %s" % first)
    w.send(OP["READ_REQ"], RQ_PSN + 1, va=t.addr + MTU, rkey=t.rkey,
           dmalen=3 * MTU, ackreq=True)
    again = [q for q in w.drain(2.0) if q["op"] in READ_RESP]
    if [q["psn"] for q in again] != [RQ_PSN + 1 + i for i in range(3)]:
        fail("READ asked again: responses %s" % again)
    # Longer than the original, or at another VA: not a duplicate.
    w.send(OP["READ_REQ"], RQ_PSN + 1, va=t.addr + MTU, rkey=t.rkey,
           dmalen=4 * MTU, ackreq=True)
    w.send(OP["READ_REQ"], RQ_PSN + 1, va=t.addr, rkey=t.rkey,
           dmalen=MTU, ackreq=True)
    if [q for q in w.drain(2.0) if q["op"] in READ_RESP]:
        fail("answered a READ that was never accepted")
    expect_state(t, QPS_RTS)

def fill_read_queue(t, w):
    """READ A (4 MiB) and seven short READs, each answered; then all eight
    asked again, A first (its 4096 responses keep the read work busy),
    which fills the READ queue (twice max_dest_rd_atomic, 4). Returns the
    short READs' PSNs, the next PSN, dup_read_dropped and nak_sent before
    the copies, and how long sending them took."""
    w.udp.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)     # SO_RCVBUFFORCE
    big = t.len // MTU
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey,
           dmalen=big * MTU, ackreq=True)
    if not [q for q in w.drain(4.0) if q["op"] in READ_RESP]:
        fail("READ A not answered")
    short = [RQ_PSN + big + i for i in range(7)]
    for psn in short:
        w.send(OP["READ_REQ"], psn, va=t.addr, rkey=t.rkey, dmalen=64,
               ackreq=True)
    got = [q["psn"] for q in w.drain(1.0) if q["op"] in READ_RESP]
    if got != short:
        fail("short READs: responses %s" % got)
    d0, n0 = hw_counter("dup_read_dropped"), hw_counter("nak_sent")
    t0 = time.time()
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey,
           dmalen=big * MTU, ackreq=True)
    for psn in short:
        w.send(OP["READ_REQ"], psn, va=t.addr, rkey=t.rkey, dmalen=64,
               ackreq=True)
    return short, RQ_PSN + big + 7, d0, n0, t0


def expect_room_made(t, w, short, c, d0, n0, t0, op):
    """After fill_read_queue() and a new request at PSN @c answered by
    @op: @c answered last, once, no NAK, the QP in RTS, and exactly one
    copy dropped for it: the oldest short one (the requester completes in
    PSN order, so the newest are the ones it may still wait on)."""
    sent = time.time() - t0
    got = w.drain(8.0)
    resp = [q["psn"] for q in got if q["op"] in READ_RESP + (op,)]
    naks = [(hex(q["psn"]), syn_str(q["syn"])) for q in got
            if q["op"] == OP["ACK"]]
    dropped = hw_counter("dup_read_dropped") - d0
    again = [p for p in resp if short[0] <= p < c]
    print("# asked again in %.1f ms: %d responses of A, short ones %s, "
          "new %s; ACKs %s; dup_read_dropped +%d" %
          (sent * 1000, len([p for p in resp if p < short[0]]),
           [hex(p) for p in again], c in resp, naks, dropped))
    if naks or hw_counter("nak_sent") != n0:
        fail("answered with %s" % naks)
    expect_state(t, QPS_RTS)
    if resp.count(c) != 1 or resp[-1] != c:
        fail("new request %#x not answered last, once" % c)
    if dropped != 1:
        fail("dup_read_dropped +%d, want 1 (was the queue full?)" % dropped)
    if again != short[1:]:
        fail("short READs answered again %s, want all but the oldest %s"
             % ([hex(p) for p in again], [hex(p) for p in short[1:]]))


def t_dup_reads_fill(t, w):
    """Late copies of READs asked again never cost a new READ within the
    limit: with the READ queue full of them (fill_read_queue()), a new
    READ is answered, last, with no NAK; the oldest copy not being
    answered is dropped for it; the QP stays in RTS."""
    short, c, d0, n0, t0 = fill_read_queue(t, w)
    w.send(OP["READ_REQ"], c, va=t.addr, rkey=t.rkey, dmalen=64,
           ackreq=True)
    expect_room_made(t, w, short, c, d0, n0, t0, OP["READ_RESP_ONLY"])


def t_dup_reads_fill_atomic(t, w):
    """The same for a new atomic: a FETCH ADD behind the queue full of
    copies is carried out once and answered last, with no NAK."""
    before = struct.unpack("<Q", bytes.fromhex(t.cmd("dump 64 8")))[0]
    short, c, d0, n0, t0 = fill_read_queue(t, w)
    w.send(OP["FETCH_ADD"], c, atomic=(t.addr + 64, t.rkey, 3, 0),
           ackreq=True)
    expect_room_made(t, w, short, c, d0, n0, t0, OP["ATOMIC_ACK"])
    after = struct.unpack("<Q", bytes.fromhex(t.cmd("dump 64 8")))[0]
    if after != before + 3:
        fail("FETCH ADD: %#x -> %#x, want +3" % (before, after))


def expect_dup_reads_dropped(t, w, d0, n0, want):
    """The duplicate READs just sent are dropped: no answer, @want more in
    dup_read_dropped than @d0, no NAK (nak_sent still @n0), the QP in RTS."""
    got = w.drain(2.0)
    dropped = hw_counter("dup_read_dropped") - d0
    print("# duplicate READs: answers %s, dup_read_dropped +%d" %
          ([(q["op"], hex(q["psn"])) for q in got], dropped))
    if got:
        fail("answered %s" % [(q["op"], hex(q["psn"])) for q in got])
    if dropped != want:
        fail("dup_read_dropped +%d, want %d" % (dropped, want))
    if hw_counter("nak_sent") != n0:
        fail("a NAK was sent")
    expect_state(t, QPS_RTS)


def t_dup_read_gone(t, w):
    """A READ asked again after its MR was deregistered (a late copy, like
    one a SEND with Invalidate overtook): dropped and counted, no NAK, no
    response, the QP stays in RTS and answers the next READ."""
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey, dmalen=4 * MTU,
           ackreq=True)
    first = [q for q in w.drain(2.0) if q["op"] in READ_RESP]
    if [q["psn"] for q in first] != [RQ_PSN + i for i in range(4)]:
        fail("READ responses %s" % first)
    d0 = hw_counter("dup_read_dropped")
    n0 = hw_counter("nak_sent")
    if t.cmd("dereg") != "ok":
        fail("dereg")
    # Part of it and all of it; both refused at the request (the MR is
    # already gone: the read work's own refusal is not reached here).
    w.send(OP["READ_REQ"], RQ_PSN + 3, va=t.addr + 3 * MTU, rkey=t.rkey,
           dmalen=MTU, ackreq=True)
    w.send(OP["READ_REQ"], RQ_PSN, va=t.addr, rkey=t.rkey, dmalen=4 * MTU,
           ackreq=True)
    expect_dup_reads_dropped(t, w, d0, n0, 2)
    # The next (new) READ, of no bytes, is still answered.
    w.send(OP["READ_REQ"], RQ_PSN + 4, va=0, rkey=0, dmalen=0, ackreq=True)
    nxt = [q for q in w.drain(2.0) if q["op"] in READ_RESP]
    if [q["psn"] for q in nxt] != [RQ_PSN + 4]:
        fail("the next READ: responses %s" % nxt)
    expect_state(t, QPS_RTS)


def t_dup_read_revoked(t, w):
    """A READ of no bytes asked again after the QP's remote read right was
    taken away (modify_qp): dropped and counted like one whose memory is
    gone, no NAK, the QP stays in RTS. A new one is then refused: remote
    access NAK, the QP in ERR."""
    w.send(OP["READ_REQ"], RQ_PSN, va=0, rkey=0, dmalen=0, ackreq=True)
    first = [q for q in w.drain(2.0) if q["op"] in READ_RESP]
    if [q["psn"] for q in first] != [RQ_PSN]:
        fail("READ responses %s" % first)
    d0 = hw_counter("dup_read_dropped")
    n0 = hw_counter("nak_sent")
    if t.cmd("access 1") != "ok":   # IBV_ACCESS_LOCAL_WRITE only
        fail("modify_qp access flags")
    w.send(OP["READ_REQ"], RQ_PSN, va=0, rkey=0, dmalen=0, ackreq=True)
    expect_dup_reads_dropped(t, w, d0, n0, 1)
    w.send(OP["READ_REQ"], RQ_PSN + 1, va=0, rkey=0, dmalen=0, ackreq=True)
    expect_syn(w, RQ_PSN + 1, NAK_ACC, "a new READ without the right")
    expect_state(t, QPS_ERR, "access")


def t_nak_stale(t, w):
    """A remote access NAK for a SEND already acknowledged (a late copy)
    blames no one: the next SEND completes successfully once ACKed."""
    s0 = hw_counter("stale_naks")
    psns = []
    for k in range(2):
        if t.cmd("send 64") != "ok":
            fail("post_send %d" % k)
        q, end = None, time.time() + 5
        while time.time() < end:
            q = w.recv(1.0)
            # (a resend of the first SEND is not the second)
            if q and q["op"] == OP["SEND_ONLY"] and q["psn"] not in psns:
                break
        else:
            fail("SEND %d never arrived" % k)
        psns.append(q["psn"])
        if k == 0:
            w.send(OP["ACK"], q["psn"], b"\x1f\x00\x00\x01")
            time.sleep(0.3)
            wcs = t.poll()
            if [(c["wr_id"], c["status"]) for c in wcs] != [(0x200, 0)]:
                fail("first SEND: completions %s" % wcs)
    # NAK (remote access) for the first SEND, then for a PSN never sent.
    w.send(OP["ACK"], psns[0], b"\x62\x00\x00\x01")
    w.send(OP["ACK"], (psns[0] - 100) & 0xffffff, b"\x62\x00\x00\x01")
    # Well within the second SEND's retries (8 x 67 ms).
    time.sleep(0.1)
    wcs = t.poll()
    print("# after stale NAKs: completions %s, stale_naks +%d" %
          (wcs, hw_counter("stale_naks") - s0))
    if wcs:
        fail("a stale NAK completed %s" % wcs)
    if hw_counter("stale_naks") - s0 != 2:
        fail("stale_naks +%d, want 2" % (hw_counter("stale_naks") - s0))
    expect_state(t, QPS_RTS)
    w.send(OP["ACK"], psns[1], b"\x1f\x00\x00\x02")
    time.sleep(0.3)
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != [(0x200, 0)]:
        fail("second SEND: completions %s" % wcs)


def t_atomic_replay(t, w):
    """Duplicate atomics are answered from the replay cache, never run again."""
    p, va = RQ_PSN, t.addr + 64

    def word():
        return struct.unpack("<Q", bytes.fromhex(t.cmd("dump 64 8")))[0]

    def acks(secs=1.0):
        return [(q["psn"], q.get("orig")) for q in w.drain(secs)
                if q["op"] == OP["ATOMIC_ACK"]]

    w.send(OP["FETCH_ADD"], p, atomic=(va, t.rkey, 5, 0), ackreq=True)
    if acks() != [(p, 0)]:
        fail("FETCH ADD: no ATOMIC ACKNOWLEDGE with 0")
    w.send(OP["FETCH_ADD"], p, atomic=(va, t.rkey, 5, 0), ackreq=True)
    if acks() != [(p, 0)] or word() != 5:
        fail("FETCH ADD again: not answered from the cache, or run twice")
    w.send(OP["CMP_SWAP"], p + 1, atomic=(va, t.rkey, 99, 5), ackreq=True)
    if acks() != [(p + 1, 5)] or word() != 99:
        fail("COMPARE SWAP 5 -> 99")
    # The older one is still cached; replays do not run.
    w.send(OP["FETCH_ADD"], p, atomic=(va, t.rkey, 5, 0), ackreq=True)
    w.send(OP["CMP_SWAP"], p + 1, atomic=(va, t.rkey, 99, 5), ackreq=True)
    if acks() != [(p, 0), (p + 1, 5)] or word() != 99:
        fail("replays of both")
    # Not what was accepted at those PSNs (another VA, opcode, a PSN
    # never used): dropped, never run, never NAKed.
    w.send(OP["CMP_SWAP"], p + 1, atomic=(va + 8, t.rkey, 1, 0), ackreq=True)
    w.send(OP["CMP_SWAP"], p, atomic=(va, t.rkey, 1, 99), ackreq=True)
    w.send(OP["FETCH_ADD"], p - 7, atomic=(va, t.rkey, 1, 0), ackreq=True)
    got = w.drain(1.0)
    if got or word() != 99 or t.cmd("dump 72 8") != "00" * 8:
        fail("a mismatched duplicate was answered or run: %s" % got)
    expect_state(t, QPS_RTS)
    # A misaligned atomic: NAK invalid request, the QP fails.
    w.send(OP["FETCH_ADD"], p + 2, atomic=(va + 4, t.rkey, 1, 0), ackreq=True)
    expect_syn(w, p + 2, NAK_INV, "misaligned FETCH ADD")
    expect_state(t, QPS_ERR)
    if word() != 99:
        fail("the misaligned FETCH ADD changed memory")


def t_atomic_write(t, w):
    """ATOMIC WRITE: stored once and answered by a READ response ONLY of no
    data; a duplicate answered again from the replay cache, not stored; a
    bad length an invalid request that stores nothing."""
    p, va = RQ_PSN, t.addr + 128
    val = bytes(range(0x11, 0x19))

    def word():
        return bytes.fromhex(t.cmd("dump 128 8"))

    def answers(secs=1.0):
        return [(q["op"], q["psn"], q.get("syn")) for q in w.drain(secs)]

    w.send(OP["ATOMIC_WRITE"], p, val, va=va, rkey=t.rkey, dmalen=8,
           ackreq=True)
    got = answers()
    if got != [(OP["READ_RESP_ONLY"], p, 0x1f)]:
        fail("ATOMIC WRITE answered by %s" % got)
    if word() != val:
        fail("ATOMIC WRITE stored %s" % word().hex())
    # The same PSN again with other bytes: a duplicate, answered, not stored.
    w.send(OP["ATOMIC_WRITE"], p, b"\xee" * 8, va=va, rkey=t.rkey, dmalen=8,
           ackreq=True)
    got = answers()
    if got != [(OP["READ_RESP_ONLY"], p, 0x1f)]:
        fail("duplicate ATOMIC WRITE answered by %s" % got)
    if word() != val:
        fail("a duplicate ATOMIC WRITE was stored: %s" % word().hex())
    # At that PSN but another address: not what was accepted, dropped.
    w.send(OP["ATOMIC_WRITE"], p, b"\xee" * 8, va=va + 8, rkey=t.rkey,
           dmalen=8, ackreq=True)
    got = answers()
    if got or t.cmd("dump 136 8") != "00" * 8:
        fail("a mismatched duplicate ATOMIC WRITE was answered or stored: %s"
             % got)
    expect_state(t, QPS_RTS)
    if t.poll():
        fail("an ATOMIC WRITE completed something on the target")
    # 4 bytes where 8 are due: NAK invalid request, nothing stored.
    w.send(OP["ATOMIC_WRITE"], p + 1, b"\xdd" * 4, va=va, rkey=t.rkey,
           dmalen=8, ackreq=True)
    expect_syn(w, p + 1, NAK_INV, "ATOMIC WRITE of 4 bytes")
    expect_state(t, QPS_ERR)
    if word() != val:
        fail("the short ATOMIC WRITE changed memory: %s" % word().hex())


def t_atomic_write_len(t, w):
    """An ATOMIC WRITE whose RETH asks for 16 bytes: invalid request."""
    p, va = RQ_PSN, t.addr + 256
    w.send(OP["ATOMIC_WRITE"], p, b"\xcc" * 16, va=va, rkey=t.rkey,
           dmalen=16, ackreq=True)
    expect_syn(w, p, NAK_INV, "ATOMIC WRITE of 16 bytes")
    expect_state(t, QPS_ERR)
    if t.cmd("dump 256 16") != "00" * 16:
        fail("the ATOMIC WRITE of 16 bytes changed memory")


def hw_counter(name):
    """A hw counter of the device under test (sysfs of the init netns)."""
    with open("/sys/class/infiniband/%s/ports/1/hw_counters/%s" %
              (os.environ.get("SRDMA_DEV", "srdma0"), name)) as f:
        return int(f.read())


def t_uc_resync(t, w):
    """UC: a stray MIDDLE far ahead or LAST far behind moves no PSN; a
    packet just behind is a duplicate; the peer's next SEND ONLY lands."""
    if t.cmd("recv 2") != "ok":
        fail("post_recv")
    d0 = hw_counter("rx_uc_msg_dropped")
    w.send(UC | OP["SEND_MIDDLE"], RQ_PSN + 0x400000, b"\xee" * 64)
    one, two = bytes(range(100)), bytes(range(200, 0, -1))
    w.send(UC | OP["SEND_ONLY"], RQ_PSN, one)
    time.sleep(0.3)
    want = {"wr_id": 0x100, "status": 0, "opcode": WC_RECV,
            "byte_len": len(one), "imm": 0, "wc_flags": 0,
            "src_qp": PEER_QPN, "qp_num": t.qpn}
    wcs = t.poll()
    if wcs != [want]:
        fail("after a stray MIDDLE: completions %s, want [%s]" % (wcs, want))
    if t.cmd("dump 0 %d" % len(one)) != one.hex():
        fail("SEND ONLY data not in place")
    # the same PSN again (late or twice): dropped, placed at most once
    w.send(UC | OP["SEND_ONLY"], RQ_PSN, b"\xdd" * 64)
    # a LAST far behind: dropped, the expected PSN stays
    w.send(UC | OP["SEND_LAST"], RQ_PSN - 0x3fffff, b"\xcc" * 64)
    w.send(UC | OP["SEND_ONLY"], RQ_PSN + 1, two)
    time.sleep(0.3)
    want.update(wr_id=0x101, byte_len=len(two))
    wcs = t.poll()
    if wcs != [want]:
        fail("after a duplicate and a stray LAST: completions %s, want [%s]"
             % (wcs, want))
    if t.cmd("dump 0 %d" % len(two)) != two.hex():
        fail("second SEND ONLY data not in place")
    d = hw_counter("rx_uc_msg_dropped") - d0
    if d != 2:
        fail("rx_uc_msg_dropped went up by %d, want 2 (MIDDLE, LAST)" % d)
    expect_state(t, QPS_RTS)
    if w.drain(0.2):
        fail("a UC responder answered")


def t_send_inv_user(t, w):
    """SEND with Invalidate to a user QP, naming its own MR's rkey: user
    MRs are never invalidated (a user PD has no fast-registration MR), so
    the receive completes in error, the answer is an invalid request NAK
    and the QP goes to ERR."""
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    w.send(OP["SEND_FIRST"], RQ_PSN, b"\x66" * MTU)
    # SEND LAST with Invalidate: the IETH sits where an ImmDt would.
    w.send(OP["SEND_LAST_INV"], RQ_PSN + 1, b"\x77" * 8, imm=t.rkey,
           ackreq=True)
    expect_syn(w, RQ_PSN + 1, NAK_INV, "SEND with Invalidate of a user rkey")
    expect_state(t, QPS_ERR, "invalid request")
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != [(0x100, WC_REM_INV_REQ)]:
        fail("completions %s, want wr_id 0x100 with status %d" %
             (wcs, WC_REM_INV_REQ))


def t_send_inv_dup(t, w):
    """A SEND ONLY with Invalidate behind the expected PSN (a duplicate) is
    ACKed and nothing else: no invalidation, no receive consumed."""
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    old = (RQ_PSN - 1) & 0xffffff
    w.send(OP["SEND_ONLY_INV"], old, b"\x88" * 8, imm=t.rkey, ackreq=True)
    # 1 credit: the receive is still there.
    expect_syn(w, old, SYN_ACK | 1, "duplicate SEND with Invalidate")
    if t.poll():
        fail("a duplicate SEND with Invalidate completed a receive")
    expect_state(t, QPS_RTS)
    if t.cmd("dump 0 8") != "00" * 8:
        fail("a duplicate SEND with Invalidate was placed")


def t_xrc_srqs(t, w):
    """XRC requests land in the SRQ their XRCETH names, answered with XRC
    ACKs; the completions (one CQ for both SRQs) name the receive QP; a
    message's packets may not change SRQ: invalid request, QP to ERR."""
    if t.cmd("recv 1") != "ok" or t.cmd("recvb 2") != "ok":
        fail("post_srq_recv")
    one, two = b"\x11" * 100, b"\x22" * 200
    w.send(OP["SEND_ONLY"], RQ_PSN, one, srqn=t.srqb, ackreq=True)
    # XRC receives are an SRQ's: no credit count.
    expect_syn(w, RQ_PSN, SYN_ACK | 0x1f, "SEND ONLY to SRQ B")
    w.send(OP["SEND_ONLY"], RQ_PSN + 1, two, srqn=t.srqa, ackreq=True)
    p = w.recv(5.0)
    if not p or not p["xrc"] or p["op"] != OP["ACK"] or p["psn"] != RQ_PSN + 1:
        fail("answer to the SEND ONLY to SRQ A: %s, want an XRC ACK" % p)
    base = {"status": 0, "opcode": WC_RECV, "imm": 0, "wc_flags": 0,
            "src_qp": PEER_QPN, "qp_num": t.qpn}
    want = [dict(base, wr_id=0x101, byte_len=len(one)),
            dict(base, wr_id=0x100, byte_len=len(two))]
    wcs = t.poll()
    if wcs != want:
        fail("completions %s, want %s" % (wcs, want))
    # FIRST to B, then a LAST naming A: the message cannot change SRQ.
    w.send(OP["SEND_FIRST"], RQ_PSN + 2, b"\x33" * MTU, srqn=t.srqb)
    w.send(OP["SEND_LAST"], RQ_PSN + 3, b"\x44" * 8, srqn=t.srqa,
           ackreq=True)
    expect_syn(w, RQ_PSN + 3, NAK_INV, "SEND LAST naming another SRQ")
    expect_state(t, QPS_ERR)
    if "last WQE" in t.state()[1]:
        fail("an XRC receive QP raised Last WQE Reached")
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != [(0x102, WC_REM_INV_REQ)]:
        fail("after the switch: completions %s, want wr_id 0x102 with status %d"
             % (wcs, WC_REM_INV_REQ))


def t_xrc_reset_held(t, w):
    """The receive an XRC receive QP took for a message in progress is its
    SRQ's owner's: the QP moved to RESET completes it as flushed on the
    SRQ's CQ, never drops it; an XRC receive QP raises no Last WQE
    Reached (no SRQ is its own)."""
    if t.cmd("recv 1") != "ok":
        fail("post_srq_recv")
    w.send(OP["SEND_FIRST"], RQ_PSN, b"\x99" * MTU, srqn=t.srqa)
    time.sleep(0.3)
    if t.poll():
        fail("a completion before the message ended")
    if t.cmd("reset") != "ok":
        fail("modify to RESET")
    wcs = t.poll()
    if [(c["wr_id"], c["status"]) for c in wcs] != [(0x100, WC_FLUSH)]:
        fail("after RESET: completions %s, want wr_id 0x100 flushed" % wcs)
    st, ev = t.state()
    if st != 0 or "last WQE" in ev:
        fail("state %d events %s, want RESET and no Last WQE Reached" % (st, ev))


def t_xrc_bad_srqn(t, w):
    """An XRCETH naming no SRQ of the domain (none, or numbers around the
    real ones): invalid request, QP to ERR, no receive taken."""
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    # Behind the expected PSN: dropped, nothing happens.
    w.send(OP["SEND_ONLY"], RQ_PSN - 1, b"\x55" * 8, srqn=0, ackreq=True)
    if w.drain(0.3):
        fail("a duplicate naming no SRQ was answered")
    expect_state(t, 2)              # RTR
    bad = max(t.srqa, t.srqb) + 1
    w.send(OP["SEND_ONLY"], RQ_PSN, b"\x55" * 8, srqn=bad, ackreq=True)
    expect_syn(w, RQ_PSN, NAK_INV, "SEND ONLY to SRQ %d" % bad)
    expect_state(t, QPS_ERR)
    if t.poll():
        fail("a receive completed")
    if t.cmd("dump 0 8") != "00" * 8:
        fail("data placed")


def t_xrc_transport(t, w):
    """Packets of the wrong transport for the QP are dropped unanswered:
    RC requests to an XRC receive QP, XRC answers to it."""
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    w.send(OP["SEND_ONLY"], RQ_PSN, b"\x66" * 8, ackreq=True)
    w.send(XRC | OP["ACK"], RQ_PSN, b"", imm=0x1f000000)
    if w.drain(0.3):
        fail("an XRC receive QP answered an RC request")
    if t.poll():
        fail("a receive completed")
    expect_state(t, 2)              # RTR


def t_xrc_to_rc(t, w):
    """An XRC request to an RC QP is dropped unanswered."""
    if t.cmd("recv 1") != "ok":
        fail("post_recv")
    w.send(OP["SEND_ONLY"], RQ_PSN, b"\x77" * 8, srqn=1, ackreq=True)
    if w.drain(0.3):
        fail("an RC QP answered an XRC request")
    if t.poll():
        fail("a receive completed")
    expect_state(t, QPS_RTS)


def expect_send_wc(t, wcs):
    """@wcs is one successful SEND completion, every field (byte_len is
    for receives and READs: 0 here)."""
    want = [dict(wr_id=0x200, status=0, opcode=0, byte_len=0, imm=0,
                 wc_flags=0, src_qp=0, qp_num=t.qpn)]
    if wcs != want:
        fail("completions %s, want %s" % (wcs, want))


def first_send(t, w):
    """Post a 64-byte SEND on the target: the PSN of its SEND ONLY."""
    if t.cmd("send 64") != "ok":
        fail("post_send")
    q = w.recv(5.0)
    if not q or q["op"] != OP["SEND_ONLY"]:
        fail("first SEND: %s" % q)
    return q["psn"]


def expect_send_wcs(t, n):
    """After a moment, @n successful SEND completions, every field of each."""
    time.sleep(0.3)
    wcs = t.poll()
    if len(wcs) != n:
        fail("completions %s, want %d" % (wcs, n))
    for c in wcs:
        expect_send_wc(t, [c])


def timeout_probe(t, w):
    """Set up an early timeout: one SEND ACKed at once (an RTT sample),
    then one of 8 packets left unanswered until the requester resends its
    first packet. Returns (first PSN, counters before). Asserts that the
    probe is that one packet, with AckReq, and that nothing else of the
    message follows it."""
    first = first_send(t, w)
    w.send(OP["ACK"], first, b"\x1f\x00\x00\x01")
    expect_send_wcs(t, 1)
    c0 = {k: hw_counter(k) for k in ("early_timeouts", "tail_loss_probes",
                                     "ack_timeouts", "retransmits")}
    if t.cmd("send %d" % (8 * MTU)) != "ok":
        fail("post_send 8 KiB")
    p = (first + 1) & 0xffffff
    got = [w.recv(2.0) for _ in range(8)]
    if [g and (g["op"], g["psn"]) for g in got] != \
            [(OP["SEND_FIRST"], p)] + [(OP["SEND_MIDDLE"], p + i) for i in range(1, 7)] + \
            [(OP["SEND_LAST"], p + 7)]:
        fail("8 KiB SEND: %s" % [g and (g["op"], hex(g["psn"])) for g in got])
    before, t0, end = [], time.time(), time.time() + 2.0
    while time.time() < end:
        g = w.recv(0.5)
        if not g:
            continue
        if g["psn"] == p:
            break
        before.append(g["psn"])
    else:
        fail("no resend of the first packet; resent %s" % [hex(x) for x in before])
    # Which timer sent it: an early timeout, or (too late) the QP's own.
    print("# resent before the probe: %s; probe after %.0f ms; %s" %
          ([hex(x) for x in before], (time.time() - t0) * 1000,
           ", ".join("%s +%d" % (k, hw_counter(k) - v) for k, v in c0.items())))
    if not g["ackreq"] or g["op"] != OP["SEND_FIRST"]:
        fail("probe: %s" % g)
    # Only a tail-loss probe (the last packet) may come before it.
    if any(x != p + 7 for x in before):
        fail("resent before the probe: %s" % [hex(x) for x in before])
    # Going back N would have sent the rest right behind it.
    nxt = w.recv(0.005)
    if nxt:
        fail("after the probe came %s: went back N" % nxt)
    return p, c0


def timeout_done(t, c0):
    """The 8-packet SEND of timeout_probe() completed (every field), after
    an early timeout and no ACK timeout since @c0; the QP in RTS."""
    expect_send_wc(t, t.poll())
    d = {k: hw_counter(k) - v for k, v in c0.items()}
    print("# counters: %s" % d)
    if d["early_timeouts"] < 1 or d["ack_timeouts"] != 0:
        fail("counters %s: want an early timeout and no ACK timeout" % d)
    expect_state(t, QPS_RTS)


def t_timeout_late(t, w):
    """An early timeout when the packets were late, not lost: only the
    oldest packet is resent, and once an ACK covers the whole message
    nothing more is."""
    p, c0 = timeout_probe(t, w)
    w.send(OP["ACK"], p + 7, b"\x1f\x00\x00\x02")
    # A late ACK may meet a second probe (the next early timeout), never
    # more of the message.
    rest = [g for g in w.drain(0.5) if g["op"] != OP["ACK"] and g["psn"] != p]
    if rest:
        fail("resent after the ACK: %s" % [(g["op"], hex(g["psn"])) for g in rest])
    timeout_done(t, c0)


def t_timeout_lost(t, w):
    """An early timeout when the packets were lost: the ACK of the probe
    alone makes the requester go back N at once, from the packet after."""
    p, c0 = timeout_probe(t, w)
    w.send(OP["ACK"], p, b"\x1f\x00\x00\x01")
    again = [g for g in (w.recv(1.0) for _ in range(8)) if g and g["psn"] != p][:7]
    if [g and g["psn"] for g in again] != [p + i for i in range(1, 8)]:
        fail("after the probe's ACK: %s" % [g and hex(g["psn"]) for g in again])
    w.send(OP["ACK"], p + 7, b"\x1f\x00\x00\x02")
    time.sleep(0.3)
    timeout_done(t, c0)


def t_ack_unsent(t, w):
    """An ACK for PSNs a long SEND has been given but has not sent yet (it
    waits for the window) is no acknowledgement: dropped and counted, the
    SEND not completed. ACKs of what was sent then carry it to its end,
    every packet sent."""
    first = first_send(t, w)
    w.send(OP["ACK"], first, b"\x1f\x00\x00\x01")
    expect_send_wcs(t, 1)
    n = 256
    p, last = (first + 1) & 0xffffff, (first + n) & 0xffffff
    if t.cmd("send %d" % (n * MTU)) != "ok":
        fail("post_send %d KiB" % n)
    seen = set()
    while True:                     # what the window lets go unanswered
        g = w.recv(0.1)
        if not g:
            break
        seen.add(g["psn"])
    if not seen or max(seen) >= last:
        fail("sent %s of the %d packets unanswered: nothing held back"
             % (len(seen), n))
    high = max(seen)
    print("# sent %d packets of %d, up to %#x, before any ACK" %
          (len(seen), n, high))
    d0 = hw_counter("rx_duplicates")
    w.send(OP["ACK"], last, b"\x1f\x00\x00\x02")
    time.sleep(0.2)
    wcs = t.poll()
    if wcs:
        fail("an ACK of PSN %#x, never sent, completed %s" % (last, wcs))
    if hw_counter("rx_duplicates") - d0 < 1:
        fail("the ACK of a PSN never sent was not counted")
    end = time.time() + 10
    while time.time() < end and max(seen) != last:
        w.send(OP["ACK"], max(seen), b"\x1f\x00\x00\x01")
        for g in w.drain(0.05):
            seen.add(g["psn"])
    missing = [hex(q & 0xffffff) for q in range(p, p + n)
               if q & 0xffffff not in seen]
    if missing:
        fail("packets never sent: %s" % missing[:8])
    w.send(OP["ACK"], last, b"\x1f\x00\x00\x02")
    time.sleep(0.3)
    expect_send_wc(t, t.poll())
    expect_state(t, QPS_RTS)


def expect_ack(w, psn, syn, msn, what):
    """The next answer is the ACK for @psn with syndrome @syn and MSN @msn."""
    q = w.recv(5.0)
    got = q and (q["op"], q["psn"], q.get("syn"), q.get("msn"))
    if got != (OP["ACK"], psn & 0xffffff, syn, msn):
        fail("%s: answer %s, want ACK psn %#x syndrome %#x msn %d"
             % (what, got, psn, syn, msn))


def t_credits_resp(t, w):
    """The target's ACKs tell how many receives its RQ holds past the
    message their MSN counts (IBTA 9.7.7.2 credit count, on the log scale):
    a SEND takes one, a WRITE none, posted receives add, an empty RQ says
    0 and the next SEND gets an RNR NAK. Every receive completes."""
    if t.cmd("recv 3") != "ok":
        fail("post_recv")
    p = RQ_PSN
    w.send(OP["SEND_ONLY"], p, b"\x11" * 8, ackreq=True)
    expect_ack(w, p, SYN_ACK | 2, 1, "SEND with 3 receives")
    w.send(OP["WRITE_ONLY"], p + 1, b"\x22" * 8, va=t.addr + 4096,
           rkey=t.rkey, dmalen=8, ackreq=True)
    expect_ack(w, p + 1, SYN_ACK | 2, 2, "WRITE: no receive taken")
    if t.cmd("recv 5") != "ok":
        fail("post_recv 5")
    w.send(OP["SEND_ONLY"], p + 2, b"\x33" * 8, ackreq=True)
    # 6 receives left: credit count 5 stands for 6.
    expect_ack(w, p + 2, SYN_ACK | 5, 3, "SEND with 7 receives")
    for i in range(6):
        w.send(OP["SEND_ONLY"], p + 3 + i, b"\x44" * 8, ackreq=i == 5)
    expect_ack(w, p + 8, SYN_ACK | 0, 9, "the last receive taken")
    w.send(OP["SEND_ONLY"], p + 9, b"\x55" * 8, ackreq=True)
    expect_syn(w, p + 9, SYN_RNR, "SEND with no receive")
    wcs = t.poll()
    want = [{"wr_id": 0x100 + i, "status": 0, "opcode": WC_RECV,
             "byte_len": 8, "imm": 0, "wc_flags": 0, "src_qp": PEER_QPN,
             "qp_num": t.qpn} for i in range(8)]
    if wcs != want:
        fail("completions %s, want %s" % (wcs, want))
    expect_state(t, QPS_RTS)


def t_credits_req(t, w):
    """The target's requester keeps to the credits our ACKs give: with none
    left and nothing in flight one SEND goes anyway, asking for its ACK,
    and the next waits (tx_credit_waits) for an ACK with a credit; a count
    of 31 (none kept, as from an SRQ or rdma_rxe) lifts the limit."""
    c0 = hw_counter("tx_credit_waits")
    p = first_send(t, w)
    w.send(OP["ACK"], p, b"\x00\x00\x00\x01")     # message 1 done, 0 credits
    expect_send_wcs(t, 1)
    if t.cmd("send 64") != "ok" or t.cmd("send 64") != "ok":
        fail("post_send 2, 3")
    # A resend of the first SEND (a tail-loss probe) may cross its ACK
    # when the host is slow (ck40, 2026-12-06): skip it.
    q = w.recv(2.0)
    for _ in range(5):
        if not q or q["psn"] != p:
            break
        q = w.recv(2.0)
    if not q or (q["op"], q["psn"], q["ackreq"]) != (OP["SEND_ONLY"], p + 1, True):
        fail("with no credit and nothing in flight: %s, want one SEND at %#x "
             "with AckReq" % (q, p + 1))
    # Only that SEND again (a timeout's resend) until a credit comes.
    more = [g for g in w.drain(0.5) if g["psn"] != p + 1]
    if more:
        fail("sent beyond the credits: %s" % [(g["op"], hex(g["psn"])) for g in more])
    if hw_counter("tx_credit_waits") - c0 != 1:
        fail("tx_credit_waits +%d, want +1" % (hw_counter("tx_credit_waits") - c0))
    w.send(OP["ACK"], p + 1, b"\x01\x00\x00\x02")   # message 2 done, 1 credit
    # Unanswered, it is resent: the same packet each time.
    got = set((g["op"], g["psn"]) for g in w.drain(0.5) if g["psn"] != p + 1)
    if got != {(OP["SEND_ONLY"], p + 2)}:
        fail("after a credit: %s, want the SEND at %#x"
             % ([(op, hex(x)) for op, x in got], p + 2))
    w.send(OP["ACK"], p + 2, b"\x1f\x00\x00\x03")   # no count: no limit
    expect_send_wcs(t, 2)
    for i in range(3):
        if t.cmd("send 64") != "ok":
            fail("post_send %d" % (4 + i))
    # A resend of the SEND ACKed last may cross the ACK.
    got = [g for g in w.drain(0.5)
           if g["op"] == OP["SEND_ONLY"] and g["psn"] != p + 2]
    if sorted(set(g["psn"] for g in got)) != [p + 3, p + 4, p + 5]:
        fail("with no limit: %s" % [hex(g["psn"]) for g in got])
    w.send(OP["ACK"], p + 5, b"\x1f\x00\x00\x06")
    expect_send_wcs(t, 3)
    if hw_counter("tx_credit_waits") - c0 != 1:
        fail("tx_credit_waits +%d at the end, want +1"
             % (hw_counter("tx_credit_waits") - c0))
    expect_state(t, QPS_RTS)


def t_read_zero_resend(t, w):
    """A READ of no data asked again still counts as one request held by
    the responder (helper-77): five times, a zero-length READ whose first
    request goes unanswered until the requester sends it again, then is
    answered with a READ RESPONSE ONLY of no data; each completes, every
    field checked. A driver that counted every resend as one more request
    stopped sending READs once max_rd_atomic (4) were counted, for good."""
    want = [dict(wr_id=0x400, status=0, opcode=2, byte_len=0, imm=0,
                 wc_flags=0, src_qp=0, qp_num=t.qpn)]
    for k in range(5):
        if t.cmd("read 0") != "ok":
            fail("post READ %d" % k)
        first, end = None, time.time() + 5
        while time.time() < end:
            q = w.recv(1.0)
            if not q or q["op"] != OP["READ_REQ"]:
                continue
            if first is None:
                first = q["psn"]        # left unanswered
            elif q["psn"] == first:
                break                   # asked again
        else:
            fail("READ %d: %s" % (k, "no request" if first is None else
                                  "never asked again"))
        w.send(OP["READ_RESP_ONLY"], first,
               struct.pack(">I", 0x1f000000 | (k + 1)))
        time.sleep(0.3)
        wcs = t.poll()
        print("# READ %d of no data (psn %#x), answered after its resend: %s"
              % (k, first, wcs))
        if wcs != want:
            fail("READ %d: completions %s, want %s" % (k, wcs, want))
    expect_state(t, QPS_RTS)


def t_credits_read(t, w):
    """A READ goes as one request per 16 responses, and the responder's MSN
    counts each: the requester's message numbers must too, or the credits
    of later ACKs allow too much. A 17 KiB READ (two requests, answered
    with MSN 1 and 2), a SEND (message 3) ACKed with one credit: of three
    SENDs posted then, exactly one (message 4) goes, asking for its ACK."""
    c0 = hw_counter("tx_credit_waits")
    size = 17 * MTU
    data = bytes((i * 7 + 3) & 0xff for i in range(size))
    if t.cmd("read %d" % size) != "ok":
        fail("post READ")
    reqs, end = [], time.time() + 5
    while sum(r[1] for r in reqs) < size and time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] == OP["READ_REQ"]:
            reqs.append((q["psn"], min(16 * MTU, size - sum(r[1] for r in reqs))))
    if [r[1] for r in reqs] != [16 * MTU, MTU]:
        fail("READ requests %s, want 16 and 1 packets" % reqs)
    p, off = reqs[0][0], 0
    for msn, (psn, length) in enumerate(reqs, 1):
        n = length // MTU
        for i in range(n):
            aeth = struct.pack(">I", 0x1f000000 | msn)
            chunk = data[off:off + MTU]
            off += MTU
            if n == 1:
                w.send(OP["READ_RESP_ONLY"], psn, aeth + chunk)
            elif i == 0:
                w.send(13, psn, aeth + chunk)
            elif i == n - 1:
                w.send(15, psn + i, aeth + chunk)
            else:
                w.send(14, psn + i, chunk)
    time.sleep(0.3)
    wcs = t.poll()
    want = [dict(wr_id=0x400, status=0, opcode=2, byte_len=size, imm=0,
                 wc_flags=0, src_qp=0, qp_num=t.qpn)]
    if wcs != want:
        fail("READ: completions %s, want %s" % (wcs, want))
    if t.cmd("dump 0 %d" % size) != data.hex():
        fail("READ data not in place")
    if t.cmd("send 64") != "ok":
        fail("post_send")
    q = w.recv(2.0)
    if not q or (q["op"], q["psn"]) != (OP["SEND_ONLY"], p + 17):
        fail("SEND after the READ: %s" % q)
    w.send(OP["ACK"], p + 17, b"\x01\x00\x00\x03")   # message 3 done, 1 credit
    expect_send_wcs(t, 1)
    for i in range(3):
        if t.cmd("send 64") != "ok":
            fail("post_send %d" % i)
    got = set((g["op"], g["psn"], g["ackreq"]) for g in w.drain(0.5))
    if got != {(OP["SEND_ONLY"], p + 18, True)}:
        fail("with one credit after message 3: %s, want only the SEND at %#x"
             % (sorted(got), p + 18))
    w.send(OP["ACK"], p + 18, b"\x1f\x00\x00\x04")
    # A resend of the SEND just ACKed may cross the ACK.
    got = set(g["psn"] for g in w.drain(0.5)
              if g["op"] == OP["SEND_ONLY"] and g["psn"] != p + 18)
    if got != {p + 19, p + 20}:
        fail("with no limit: %s" % sorted(hex(x) for x in got))
    w.send(OP["ACK"], p + 20, b"\x1f\x00\x00\x06")
    expect_send_wcs(t, 3)
    d = hw_counter("tx_credit_waits") - c0
    if d != 1:
        fail("tx_credit_waits +%d, want +1" % d)
    expect_state(t, QPS_RTS)


def rnr_gaps(t, w, p, timer, n):
    """Answer the SEND at @p with @n RNR NAKs carrying @timer (IBTA table
    45); the seconds from each NAK to the resend it brings."""
    gaps = []
    for i in range(n):
        t0 = time.monotonic()
        w.send(OP["ACK"], p, bytes([SYN_RNR | timer, 0, 0, 0]))
        g = w.recv(2.0)
        t1 = time.monotonic()
        if not g or (g["op"], g["psn"]) != (OP["SEND_ONLY"], p):
            fail("after RNR NAK %d (timer %d): %s, want the SEND at %#x again"
                 % (i, timer, g, p))
        gaps.append(t1 - t0)
    return sorted(gaps)


def t_rnr_wait(t, w):
    """An RNR NAK is waited out for its timer, no less and not rounded up
    to jiffies (8 ms a NAK before the fix): the resend after a 2.56 ms
    timer never comes sooner, and one after a 0.01 ms timer comes within
    2 ms (half a jiffy here, HZ 250), or, on a kernel whose own round trip
    is longer (the debug kernel: 2.8 ms), at least 1.5 ms sooner than the
    soonest after a 2.56 ms timer: a driver that waits a jiffy or more
    waits as long for both.
    rnr_retry 7: every NAK is retried; the SEND then completes."""
    c0 = hw_counter("rnr_nak_received")
    p, n = first_send(t, w), 15
    long_ = rnr_gaps(t, w, p, 16, n)        # 2.56 ms
    print("# ms after a 2.56 ms RNR NAK: %s" % ["%.2f" % (x * 1e3) for x in long_])
    if long_[0] < 2.56e-3:
        fail("resent %.2f ms after a 2.56 ms RNR NAK" % (long_[0] * 1e3))
    # Each gap is taken from before the NAK is sent to after the resend
    # is read, so noise only ever lengthens it: the shortest is the
    # measure. A busy host (make check's packaging guest and builds run
    # beside this one) delays most wakeups by a host time slice, 4 ms
    # or more: one CI run had 1 gap in 45 under 2 ms. Up to 8 sets of
    # 15, stopping at the first set with one short enough.
    def soon(gaps):
        return gaps and (gaps[0] < 2e-3 or gaps[0] <= long_[0] - 1.5e-3)
    sets, short = 0, []
    while sets < 8 and not soon(short):
        more = rnr_gaps(t, w, p, 1, n)      # 0.01 ms
        sets += 1
        print("# ms after a 0.01 ms RNR NAK, set %d: %s"
              % (sets, ["%.2f" % (x * 1e3) for x in more]))
        short = sorted(short + more)
    if not soon(short):
        fail("shortest of %d waits after a 0.01 ms RNR NAK %.2f ms: want "
             "under 2 ms, or 1.5 ms under the shortest after 2.56 ms (%.2f)"
             % (len(short), short[0] * 1e3, long_[0] * 1e3))
    w.send(OP["ACK"], p, b"\x1f\x00\x00\x01")
    expect_send_wcs(t, 1)
    if w.drain(0.2):
        fail("sent more after the ACK")
    d = hw_counter("rnr_nak_received") - c0
    if d != (1 + sets) * n:
        fail("rnr_nak_received +%d, want +%d" % (d, (1 + sets) * n))
    expect_state(t, QPS_RTS)


def t_rnr_hang(t, w):
    """After an RNR wait the requester must come back by itself even when
    the window lets nothing go (helper-77). The target's 64 KiB READ R
    (4 requests of 16 responses) and a SEND S behind it; R's first 16
    responses let S go; a sequence NAK for R's 17th response halves the
    window and R is asked again from there; an RNR NAK (0.01 ms) for S,
    then silence. S lies beyond the halved window, so the wait's end sends
    nothing: only the ACK timer, which the RNR wait stopped, can ask for
    R's missing responses again. Something must come within 3 s (it did
    not: the QP waited for ever)."""
    size = 64 * MTU
    if t.cmd("read %d" % size) != "ok" or t.cmd("send 64") != "ok":
        fail("post READ and SEND")
    reqs, end = [], time.time() + 5
    while len(reqs) < 4 and time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] == OP["READ_REQ"]:
            reqs.append(q["psn"])
    if len(reqs) != 4:
        fail("READ requests %s, want 4" % [hex(x) for x in reqs])
    p = reqs[0]
    for i in range(16):
        aeth = struct.pack(">I", 0x1f000001)
        op = 13 if i == 0 else 15 if i == 15 else 14
        w.send(op, p + i, (aeth if op != 14 else b"") + b"\x3c" * MTU)
    s_psn, end = None, time.time() + 5
    while s_psn is None and time.time() < end:
        q = w.recv(1.0)
        if q and q["op"] == OP["SEND_ONLY"]:
            s_psn = q["psn"]
    if s_psn != (p + 64) & 0xffffff:
        fail("SEND at %s, want %#x" % (s_psn and hex(s_psn), p + 64))
    w.send(OP["ACK"], p + 16, struct.pack(">I", 0x60000001))   # seq NAK
    again = [q["psn"] for q in w.drain(0.1) if q["op"] == OP["READ_REQ"]]
    print("# after the sequence NAK: READ asked again at %s"
          % [hex(x) for x in again])
    w.send(OP["ACK"], s_psn, struct.pack(">I", 0x21000001))    # RNR NAK
    got = [(q["op"], q["psn"]) for q in w.drain(3.0)]
    print("# after the RNR NAK, 3 s: %s" % [(op, hex(x)) for op, x in got])
    if not got:
        fail("nothing sent within 3 s of the RNR NAK: the QP hangs")


def t_to_reset_qp(t, w):
    """A request to a QP moved to RESET is dropped unanswered and counted
    as for a QP in the wrong state (rx_bad_qp_state), not as a bad header:
    the QP has no peer any more, whose address the packet could fail."""
    if t.cmd("reset") != "ok":
        fail("modify to RESET")
    h0, s0 = hw_counter("rx_bad_header"), hw_counter("rx_bad_qp_state")
    w.send(OP["SEND_ONLY"], RQ_PSN, b"\x12" * 8, ackreq=True)
    w.send(OP["WRITE_ONLY"], RQ_PSN + 1, b"\x34" * 8, va=0, rkey=0,
           dmalen=8, ackreq=True)
    if w.drain(0.3):
        fail("a QP in RESET answered")
    dh = hw_counter("rx_bad_header") - h0
    ds = hw_counter("rx_bad_qp_state") - s0
    if (dh, ds) != (0, 2):
        fail("rx_bad_header +%d, rx_bad_qp_state +%d: want +0, +2" % (dh, ds))
    if t.poll():
        fail("a completion")


def main():
    ns, test, gidx = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fn = globals().get("t_" + test)
    if not fn:
        fail("no test " + test)
    # timeout_*: an ACK timeout of 537 ms, so that the adaptive timeout
    # comes first whatever the RTT sample (this script's reaction time);
    # rnr_hang: so that no ACK timeout comes between its NAKs;
    # ack_unsent: none while it holds the ACKs back;
    # send_stall: 268 ms, so that its retries outlast the link's 0.3 s
    # down and the host's delay in bringing it up again.
    t = Target(gidx, uc=test.startswith("uc_"),
               xrc=test.startswith("xrc_") and test != "xrc_to_rc",
               timeout=17 if test.startswith("timeout_") or
               test in ("rnr_hang", "ack_unsent") else
               16 if test == "send_stall" else None,
               odp=test.startswith("odp_"))
    enter_netns(ns)
    w = Wire(t.qpn)
    try:
        fn(t, w)
    finally:
        t.quit()
    print("# %s: ok" % test)


main()

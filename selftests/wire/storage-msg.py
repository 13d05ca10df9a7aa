#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Two-guest message over TCP, a barrier that carries data.

'storage-msg.py recv PORT [SECS]' waits (600 s by default) for one
connection on PORT and copies what it sends to stdout; exit 1 on timeout.
'storage-msg.py send HOST PORT [SECS]' connects to HOST:PORT (retrying
for SECS, 120 by default, while the receiver is not listening yet or the
wire does not answer) and sends stdin; exit 1 if it never connects,
saying so on stderr with how long it tried.
"""
import socket
import sys
import time


def recv(port, secs):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    s.settimeout(secs)
    try:
        c, _ = s.accept()
    except socket.timeout:
        sys.exit(1)
    c.settimeout(secs)
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    sys.stdout.buffer.write(data)


def send(host, port, secs):
    data = sys.stdin.buffer.read()
    t0 = time.time()
    while True:
        try:
            c = socket.create_connection((host, port), 2)
            break
        except OSError as e:
            if time.time() > t0 + secs:
                print("storage-msg: no connection to %s:%d in %.0f s (%s)"
                      % (host, port, time.time() - t0, e), file=sys.stderr)
                sys.exit(1)
            time.sleep(0.2)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    c.close()


if sys.argv[1] == "recv":
    recv(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 600)
else:
    send(sys.argv[2], int(sys.argv[3]),
         float(sys.argv[4]) if len(sys.argv) > 4 else 120)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Two-guest barrier over TCP: 'barrier.py wait PORT' blocks until
'barrier.py signal HOST PORT' connects (the signaller retries for 120 s)."""
import socket
import sys
import time

if sys.argv[1] == "wait":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[2])))
    s.listen(1)
    s.settimeout(600)
    c, _ = s.accept()
    c.close()
else:
    deadline = time.time() + 120
    while True:
        try:
            socket.create_connection((sys.argv[2], int(sys.argv[3])), 2).close()
            break
        except OSError:
            if time.time() > deadline:
                sys.exit(1)
            time.sleep(0.2)

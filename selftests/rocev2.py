# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""RoCEv2 packet pieces shared by the Python tests that craft packets
(hostile.py, ud_wrong_dev.py)."""
import struct
import zlib


def icrc(ip, udp, body):
    """The ICRC of an IPv4 RoCEv2 packet: a CRC-32 over 8 bytes of 0xff
    (the masked LRH), the IP header with TOS, TTL and checksum masked,
    the UDP header with its checksum masked, and BTH on with its
    reserved byte masked; 4 bytes, little-endian, to follow @body."""
    mip = bytearray(ip)
    mip[1] = mip[8] = mip[10] = mip[11] = 0xff
    mudp = bytearray(udp)
    mudp[6] = mudp[7] = 0xff
    mb = bytearray(body)
    mb[4] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + bytes(mip) + bytes(mudp) + bytes(mb))
    return struct.pack("<I", crc)

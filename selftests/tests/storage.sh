#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Kernel storage over srdma in one guest: the ULPs are the test of fast
# registration (ib_alloc_mr, map_mr_sg, REG_MR), SEND with Invalidate and
# local invalidation, none of which user space can reach. srdma0 serves
# both ends: the host's connection and the target's loop back through
# srdma's local delivery.
#
# NVMe over Fabrics: nvmet with an RDMA port on 10.0.0.1 and a
# namespace on a RAM disk (brd), nvme-rdma connected to it (nvme-cli), data
# written, read back and compared (dd, then fio with verify). Sizes are
# above the target's 4 KiB of inline data and span many MR pages (1 MiB
# is 256 pages, nvme-rdma's most). Reads come back as RDMA WRITEs to the
# host's MR and writes go out as RDMA READs from it; either way the
# target's response is a SEND with Invalidate of the host's rkey.
#
# NFS over RDMA: nfsd with an RDMA listener on port 20049, the client
# mounted with -o rdma,port=20049, a file tree written, read and
# compared. xprtrdma registers its chunks with REG_MR and invalidates
# them with LOCAL_INV, or svcrdma with SEND with Invalidate.

STORAGE_NQN=nqn.2026-01.org.srdma:storage-test
STORAGE_CFG=/sys/kernel/config/nvmet
# The target's address and the network the NFS export is for: the one
# guest's veth here; selftests/wire/storage-peer.sh sets them for two.
STORAGE_ADDR=${STORAGE_ADDR:-10.0.0.1}
STORAGE_NET=${STORAGE_NET:-10.0.0.0/24}

# Skip (4) unless the kernel has the modules and the tools are installed.
storage_need() {
	local m t
	for m in "$@"; do
		case $m in
		*.bin) t=${m%.bin}
		       command -v "$t" > /dev/null ||
			       { echo "$t not installed (scripts/install-deps)"; exit 4; } ;;
		*) modinfo "$m" > /dev/null 2>&1 ||
			{ echo "no $m module in this kernel"; exit 4; } ;;
		esac
	done
}

# The hw counters the storage tests check, as "name value" lines.
storage_counters() {
	local c
	for c in fast_reg local_invalidate remote_invalidate \
		 remote_invalidate_errors fast_reg_errors remote_access_errors \
		 rx_out_of_sequence retransmits; do
		echo "$c $(counter $c)"
	done
}

# The value of counter $1 in a storage_counters listing $2.
# What srdma0 counted, for a failed run: every counter that is not 0.
storage_why() {
	rdma statistic show link srdma0/1 | tr ' ' '\n' |
		awk 'prev != "" && $1 ~ /^[0-9]+$/ && $1 != 0 { printf "%s %s ", prev, $1 }
		     { prev = $1 }'
	echo
}

storage_counter_of() { awk -v c="$1" '$1 == c { print $2 }' <<< "$2"; }

# The block device of the namespace of $STORAGE_NQN (with native
# multipath, the head: nvmeXcYnZ are hidden paths without a node).
nvme_storage_dev() {
	local b
	for b in /sys/block/nvme*n1; do
		[[ ${b##*/} =~ ^nvme[0-9]+n1$ ]] || continue
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$STORAGE_NQN" ] ||
			continue
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}

nvme_storage_gone() { ! nvme_storage_dev; }

# Does block device $1 have the namespace's 64 MiB yet?
nvme_storage_sized() { [ "$(blockdev --getsize64 "$1")" = $((64 << 20)) ]; }

# The nvmet target: subsystem, a namespace on a RAM disk (brd) of $1 MiB,
# RDMA port on $STORAGE_ADDR:4420. (A file on the guest's overlayfs root will
# not do: overlayfs inodes report no block size, and nvmet then describes
# a namespace of 1-byte blocks, which the host refuses as empty.)
nvmet_setup() {
	local s=$STORAGE_CFG/subsystems/$STORAGE_NQN p=$STORAGE_CFG/ports/1
	modprobe nvmet && modprobe nvmet-rdma || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config || return 1
	modprobe brd rd_nr=1 rd_size=$(($1 * 1024)) || return 1
	wait_for 5 test -b /dev/ram0 || return 1
	mkdir "$s" && echo 1 > "$s/attr_allow_any_host" || return 1
	mkdir "$s/namespaces/1" || return 1
	echo /dev/ram0 > "$s/namespaces/1/device_path"
	echo 1 > "$s/namespaces/1/enable" || return 1
	mkdir "$p" || return 1
	echo rdma > "$p/addr_trtype"
	echo ipv4 > "$p/addr_adrfam"
	echo "$STORAGE_ADDR" > "$p/addr_traddr"
	echo 4420 > "$p/addr_trsvcid"
	ln -s "$s" "$p/subsystems/$STORAGE_NQN" || return 1
}

# Undo nvme connect and nvmet_setup, unload the NVMe modules. Run on the
# way out of every NVMe test, passed or failed.
nvme_storage_teardown() {
	local s=$STORAGE_CFG/subsystems/$STORAGE_NQN p=$STORAGE_CFG/ports/1
	nvme disconnect -n "$STORAGE_NQN" > /dev/null 2>&1
	rm -f "$p/subsystems/$STORAGE_NQN" 2>/dev/null
	rmdir "$p" 2>/dev/null
	[ -d "$s/namespaces/1" ] &&
		{ echo 0 > "$s/namespaces/1/enable"; rmdir "$s/namespaces/1"; }
	rmdir "$s" 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma nvmet 2>/dev/null
	modprobe -r brd 2>/dev/null
	rm -f /tmp/storage.*
}

# Connect the host to the target (more nvme connect options in "$@");
# the namespace's block device on stdout.
nvme_storage_connect() {
	local dev kato=()
	# On the debug kernel (SRDMA_TEST_SLOW) a 1 MiB I/O can take seconds:
	# NVMe's keep-alive (5 s) and I/O (30 s) timeouts scale with it.
	if [ "${SRDMA_TEST_SLOW:-0}" -gt 0 ]; then
		kato=(--keep-alive-tmo=$((5 << SRDMA_TEST_SLOW * 2)))
		echo $((30 << SRDMA_TEST_SLOW)) > \
			/sys/module/nvme_core/parameters/io_timeout 2>/dev/null
	fi
	nvme connect -t rdma -a "$STORAGE_ADDR" -s 4420 -n "$STORAGE_NQN" \
		--nr-io-queues=2 --queue-size=64 "${kato[@]}" "$@" >&2 || return 1
	wait_for 30 nvme_storage_dev > /dev/null || return 1
	dev=$(nvme_storage_dev)
	wait_for 10 test -b "$dev" || return 1
	echo "$dev"
}

# Write $2 blocks of $1 bytes of random data at block $3 of $dev with
# O_DIRECT, read them back the same way, compare.
nvme_dd_roundtrip() {
	local bs=$1 n=$2 at=$3
	head -c $((bs * n)) /dev/urandom > /tmp/storage.out
	dd if=/tmp/storage.out of="$dev" bs="$bs" seek="$at" count="$n" \
		oflag=direct status=none || { echo "dd write bs=$bs"; return 1; }
	dd if="$dev" of=/tmp/storage.in bs="$bs" skip="$at" count="$n" \
		iflag=direct status=none || { echo "dd read bs=$bs"; return 1; }
	cmp /tmp/storage.out /tmp/storage.in ||
		{ echo "data differ, bs=$bs"; return 1; }
}

# No QP, MR or cm_id left on srdma0 but the MAD layer's QP1.
storage_nothing_left() {
	[ "$(rdma resource show qp link srdma0/1 | grep -vc 'lqpn 1 ')" = 0 ] &&
		[ -z "$(rdma resource show mr)" ] &&
		[ -z "$(rdma resource show cm_id)" ]
}

# Did the NVMe host or target log an error since line $1 of dmesg? A
# sequence NAK and its resend are normal (local delivery drops packets
# when its queue is full); a QP in error shows as error recovery here.
nvme_errors_since() {
	dmesg | tail -n +$(($1 + 1)) |
		grep -iE 'nvmet?(_rdma)?[ :].*(error|reset|reconnect|fail|timeout|abort)'
}

test_storage_nvme_rdma() {
	local dev before after d mark
	storage_need nvmet nvmet-rdma nvme-rdma brd nvme.bin
	mark=$(dmesg | wc -l)
	trap nvme_storage_teardown EXIT
	modprobe rdma_cm || fail "rdma_cm"
	setup_bound_veth || fail "link add"
	# Fast registration is what makes srdma a device for the ULPs.
	ibv_devinfo -v -d srdma0 | grep -q MEM_MGT_EXTENSIONS ||
		fail "srdma0 does not report MEM_MGT_EXTENSIONS"
	nvmet_setup 64 || fail "nvmet setup"
	before=$(storage_counters)
	modprobe nvme-rdma || fail "modprobe nvme-rdma"
	dev=$(nvme_storage_connect) || fail "nvme connect -t rdma: $(dmesg | tail -5)"
	wait_for 10 nvme_storage_sized "$dev" ||
		fail "$dev: $(blockdev --getsize64 "$dev") bytes"
	echo "# $dev: $(cat /sys/block/"${dev#/dev/}"/queue/max_hw_sectors_kb) KiB per I/O at most"

	# 1 MiB: 256 pages in one MR; 128 KiB; 8 KiB (two pages, beyond the
	# inline data); 4 KiB (a write in the command capsule, a read
	# through an MR); 512 bytes, unaligned to the page.
	nvme_dd_roundtrip 1048576 8 1 || fail "1 MiB blocks"
	nvme_dd_roundtrip 131072 16 3 || fail "128 KiB blocks"
	nvme_dd_roundtrip 8192 64 7 || fail "8 KiB blocks"
	nvme_dd_roundtrip 4096 64 5 || fail "4 KiB blocks"
	nvme_dd_roundtrip 512 33 3 || fail "512-byte blocks"

	if command -v fio > /dev/null; then
		fio --name=srdma-verify --filename="$dev" --direct=1 \
			--ioengine=libaio --iodepth=32 --rw=randwrite \
			--bsrange=4k-1m --size=32m --verify=crc32c \
			--do_verify=1 --verify_fatal=1 --random_generator=lfsr \
			--output=/tmp/storage.fio > /dev/null 2>&1 ||
			fail "fio verify: $(tail -20 /tmp/storage.fio)
$(storage_why)"
		grep -qE 'err= *0' /tmp/storage.fio ||
			fail "fio reported errors: $(cat /tmp/storage.fio)"
		echo "# fio: $(grep -oE '(READ|WRITE): bw=[^,]*' /tmp/storage.fio | tr '\n' ' ')"
	fi

	nvme_errors_since "$mark" && fail "NVMe errors logged: $(storage_why)"
	nvme disconnect -n "$STORAGE_NQN" > /dev/null || fail "nvme disconnect"
	wait_for 10 nvme_storage_gone || fail "namespace still there"
	after=$(storage_counters)
	echo "# counters: $(tr '\n' ' ' <<< "$after")"
	for d in fast_reg remote_invalidate; do
		[ "$(storage_counter_of $d "$after")" -gt \
		  "$(storage_counter_of $d "$before")" ] || fail "$d did not grow"
	done
	for d in fast_reg_errors remote_invalidate_errors remote_access_errors; do
		[ "$(storage_counter_of $d "$after")" = \
		  "$(storage_counter_of $d "$before")" ] || fail "$d grew"
	done
	# Every REG_MR was invalidated again: by the target's SEND with
	# Invalidate, or by the host's LOCAL_INV where it had none.
	[ $(($(storage_counter_of fast_reg "$after") -
	     $(storage_counter_of fast_reg "$before"))) = \
	  $(($(storage_counter_of remote_invalidate "$after") -
	     $(storage_counter_of remote_invalidate "$before") +
	     $(storage_counter_of local_invalidate "$after") -
	     $(storage_counter_of local_invalidate "$before"))) ] ||
		fail "REG_MRs not matched by invalidations"
	nvme_storage_teardown
	trap - EXIT
	wait_for 10 storage_nothing_left ||
		fail "resources left: $(rdma resource show)"
	lsmod | grep -qE '^nvme_rdma|^nvmet_rdma' && fail "modules still loaded"
	return 0
}

STORAGE_EXPORT=/tmp/storage-export
STORAGE_MNT=/tmp/storage-mnt

# An NFS server with an RDMA listener on port 20049 exporting a tmpfs
# (overlayfs, the guest's root, is not exportable): rpcbind, rpc.mountd
# (which answers nfsd's export upcalls), nfsd with NFSv3 and v4.2, its
# NFSv4 grace period and lease at their 10 s minimum.
nfsd_setup() {
	modprobe nfsd && modprobe rpcrdma || return 1
	mkdir -p "$STORAGE_EXPORT" "$STORAGE_MNT" /var/lib/nfs/v4recovery \
		/run/rpcbind || return 1
	mount -t tmpfs -o "size=${STORAGE_EXPORT_SIZE:-256m}" tmpfs \
		"$STORAGE_EXPORT" || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		return 1
	echo 10 > /proc/fs/nfsd/nfsv4gracetime
	echo 10 > /proc/fs/nfsd/nfsv4leasetime
	# In the foreground, so that the teardown stops them by their pid.
	rpcbind -f -w > /dev/null 2>&1 &
	echo $! > /tmp/storage.rpcbind.pid
	wait_for 5 test -S /run/rpcbind.sock || return 1
	# fsid=0: the NFSv4 root (the pseudo root above it would be the
	# overlayfs, which nfsd cannot export).
	exportfs -o rw,no_root_squash,insecure,fsid=0,sync \
		"$STORAGE_NET:$STORAGE_EXPORT" || return 1
	rpc.mountd -F > /dev/null 2>&1 &
	echo $! > /tmp/storage.mountd.pid
	rpc.nfsd -V 3 -V 4.2 4 || return 1
	echo "rdma 20049" > /proc/fs/nfsd/portlist || return 1
	grep -q 'rdma 20049' /proc/fs/nfsd/portlist
}

nfs_storage_teardown() {
	umount -f "$STORAGE_MNT" 2>/dev/null
	rpc.nfsd 0 2>/dev/null
	exportfs -ua 2>/dev/null
	local f
	for f in /tmp/storage.mountd.pid /tmp/storage.rpcbind.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	# Every rpc.mountd, not only the one started last: each holds nfsd's
	# cache channels open, and with them nfsd's module.
	pkill -x rpc.mountd 2>/dev/null
	wait_for 10 sh -c '! pgrep -x rpc.mountd'
	umount "$STORAGE_EXPORT" 2>/dev/null
	umount /proc/fs/nfsd 2>/dev/null
	modprobe -r nfsv4 nfsv3 nfs nfsd rpcrdma 2>/dev/null
	rm -rf /tmp/storage.* "$STORAGE_MNT" "$STORAGE_EXPORT"
}

# A tree of random files (1 byte to 4 MiB, odd sizes) in $1.
nfs_tree() {
	local s i=0
	mkdir -p "$1/a/b" || return 1
	for s in 1 4095 4096 65537 1048576 4194301; do
		head -c "$s" /dev/urandom > "$1/f$i" || return 1
		head -c "$s" /dev/urandom > "$1/a/b/g$i" || return 1
		i=$((i + 1))
	done
}

# Checksums of every file under $1, by relative path.
nfs_sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

# Mount over RDMA with NFS version $1, copy a tree in and another out,
# remount (nothing from the client's cache), compare both ways.
nfs_roundtrip() {
	local v=$1 opts=proto=rdma,port=20049 src=10.0.0.1:/
	[ "$v" = 3 ] && opts=$opts,nolock,mountproto=tcp &&
		src=10.0.0.1:$STORAGE_EXPORT
	mount -t nfs -o "vers=$v,$opts" "$src" "$STORAGE_MNT" ||
		{ echo "mount vers=$v over RDMA"; return 1; }
	grep " $STORAGE_MNT " /proc/mounts | grep -q 'proto=rdma' ||
		{ echo "not mounted over RDMA: $(grep " $STORAGE_MNT " /proc/mounts)"; return 1; }
	rm -rf /tmp/storage.in /tmp/storage.out "$STORAGE_EXPORT/in$v" \
		"$STORAGE_EXPORT/srv$v"
	nfs_tree /tmp/storage.in && nfs_tree "$STORAGE_EXPORT/srv$v" || return 1
	cp -r /tmp/storage.in "$STORAGE_MNT/in$v" || { echo "copy in"; return 1; }
	umount "$STORAGE_MNT" || { echo "umount"; return 1; }
	mount -t nfs -o "vers=$v,$opts" "$src" "$STORAGE_MNT" ||
		{ echo "remount"; return 1; }
	cp -r "$STORAGE_MNT/srv$v" /tmp/storage.out || { echo "copy out"; return 1; }
	[ "$(nfs_sums /tmp/storage.in)" = "$(nfs_sums "$STORAGE_EXPORT/in$v")" ] ||
		{ echo "vers=$v: written files differ on the server"; return 1; }
	[ "$(nfs_sums /tmp/storage.in)" = "$(nfs_sums "$STORAGE_MNT/in$v")" ] ||
		{ echo "vers=$v: written files read back differ"; return 1; }
	[ "$(nfs_sums "$STORAGE_EXPORT/srv$v")" = "$(nfs_sums /tmp/storage.out)" ] ||
		{ echo "vers=$v: read files differ"; return 1; }
	umount "$STORAGE_MNT" || { echo "umount vers=$v"; return 1; }
}

test_storage_nfs_rdma() {
	local before after d
	storage_need nfsd rpcrdma nfsv4 nfsv3 rpc.nfsd.bin rpc.mountd.bin \
		exportfs.bin rpcbind.bin
	trap nfs_storage_teardown EXIT
	modprobe rdma_cm || fail "rdma_cm"
	setup_bound_veth || fail "link add"
	nfsd_setup || fail "nfsd setup: $(tail -3 /proc/fs/nfsd/portlist 2>&1)"
	before=$(storage_counters)
	nfs_roundtrip 4.2 || fail "NFSv4.2 over RDMA"
	nfs_roundtrip 3 || fail "NFSv3 over RDMA"
	after=$(storage_counters)
	echo "# counters: $(tr '\n' ' ' <<< "$after")"
	[ "$(storage_counter_of fast_reg "$after")" -gt \
	  "$(storage_counter_of fast_reg "$before")" ] || fail "no REG_MR"
	for d in fast_reg_errors remote_invalidate_errors remote_access_errors; do
		[ "$(storage_counter_of $d "$after")" = \
		  "$(storage_counter_of $d "$before")" ] || fail "$d grew"
	done
	nfs_storage_teardown
	trap - EXIT
	wait_for 20 storage_nothing_left ||
		fail "resources left: $(rdma resource show)"
}

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
# file-backed namespace, nvme-rdma connected to it (nvme-cli), data
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
		 nak_sent nak_received; do
		echo "$c $(counter $c)"
	done
}

# The value of counter $1 in a storage_counters listing $2.
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
# RDMA port on 10.0.0.1:4420. (A file on the guest's overlayfs root will
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
	echo 10.0.0.1 > "$p/addr_traddr"
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

# Connect the host to the target; the namespace's block device on stdout.
nvme_storage_connect() {
	local dev
	nvme connect -t rdma -a 10.0.0.1 -s 4420 -n "$STORAGE_NQN" \
		--nr-io-queues=2 --queue-size=64 >&2 || return 1
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

test_storage_nvme_rdma() {
	local dev before after d
	storage_need nvmet nvmet-rdma nvme-rdma brd nvme.bin
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
			fail "fio verify: $(tail -20 /tmp/storage.fio)"
		grep -qE 'err= *0' /tmp/storage.fio ||
			fail "fio reported errors: $(cat /tmp/storage.fio)"
		echo "# fio: $(grep -oE '(READ|WRITE): bw=[^,]*' /tmp/storage.fio | tr '\n' ' ')"
	fi

	nvme disconnect -n "$STORAGE_NQN" > /dev/null || fail "nvme disconnect"
	wait_for 10 nvme_storage_gone || fail "namespace still there"
	after=$(storage_counters)
	echo "# counters: $(tr '\n' ' ' <<< "$after")"
	for d in fast_reg remote_invalidate; do
		[ "$(storage_counter_of $d "$after")" -gt \
		  "$(storage_counter_of $d "$before")" ] || fail "$d did not grow"
	done
	for d in fast_reg_errors remote_invalidate_errors remote_access_errors \
		 nak_sent nak_received; do
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

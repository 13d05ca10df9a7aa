#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Kernel storage across two guests on one virtual wire (scripts/vm/run2):
# NVMe over Fabrics (nvmet-rdma target, nvme-rdma host) and NFS over RDMA
# (nfsd with an RDMA listener on port 20049, a client mounted with
# proto=rdma). Usage, in both guests:
#   storage-peer.sh KIND_A KIND_B [long|delete]    KIND is srdma or rxe
# Guest a binds a KIND_A device to eth0, guest b a KIND_B device.
#
# Without "long" (make check): target and NFS server in guest b, host and
# NFS client in guest a; when the kinds differ, a second phase swaps the
# roles, so srdma meets rxe both as target and as host. fio with
# verify=crc32c at queue depths 32 and 1, 4 KiB to 1 MiB, then a read-only
# verify pass (12 and 2 MiB); NFSv4.2 and NFSv3 with an 8 MiB tree each
# way.
#
# With "long" (make check-storage): the same under 1% netem loss on both
# guests, with no controller reset allowed and a 256 MiB tree; eth0 of
# the host down for 10 s in the middle of fio (nvme-rdma must reconnect by
# itself, fio must finish without a data error); and rdma link delete of
# the device under an NVMe-oF controller and an NFS mount, first on the
# host, then (if guest b is srdma) on the target. With "delete": the link
# delete phases alone, the target's for either kind (to compare rxe's).
#
# Each guest prints one KTAP line per check it makes; scripts/run-tests
# prefixes them with the guest's name. The helpers of
# selftests/tests/storage.sh (one guest) do the set-up and teardown.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/lib.sh
. "$here/../lib.sh"
# shellcheck source=selftests/tests/storage.sh
. "$here/../tests/storage.sh"

me=$SRDMA_VM_NAME
peer=$SRDMA_PEER_IP
mode=${3:-quick}
if [ "$me" = a ]; then kind=$1; peer_kind=$2; else kind=$2; peer_kind=$1; fi
me_ip=$(ip -4 -o addr show eth0 | awk '{ sub("/.*", "", $4); print $4 }')
STORAGE_NET=$(ip -4 -o route show dev eth0 scope link | awk '{ print $1; exit }')
STORAGE_EXPORT_SIZE=640m
LOG=/tmp/sp.log

msg_send() { python3 "$here/storage-msg.py" send "$peer" "$1"; }
msg_recv() { python3 "$here/storage-msg.py" recv "$1" "${2:-900}"; }
# Both guests walk the same steps in the same order; every exchange uses
# the next port, so a late message can never be taken for a later one.
step=0
next_port() { step=$((step + 1)); port=$((18200 + step)); }

n=0
# report NAME RC SECS: one KTAP line; a failure's log, or a pass's
# measurements (its lines starting with "# "), follow as comments.
report() {
	n=$((n + 1))
	if [ "$2" = 0 ]; then
		echo "ok $n $1"
		grep '^# ' "$LOG"
		echo "# $1: $3 s"
	else
		echo "not ok $n $1"
		grep -v '^# ' "$LOG" | tail -30 | sed 's/^/# /'
		grep '^# ' "$LOG"
		echo "# $1: $3 s"
	fi
}

# run NAME FUNC [ARGS]: FUNC in a subshell (fail ends it), reported.
run() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	( set -u; "$@" ) > "$LOG" 2>&1
	rc=$?
	report "$name" $rc $(($(date +%s) - t0))
	return $rc
}

# The hw counters of this guest's device, when it is an srdma device.
dev_counters() { [ "$kind" = srdma ] && storage_counters; }
cnt() { storage_counter_of "$1" "$2"; }

# No QP but QP1, no MR and no cm_id on device $1.
nothing_left_on() {
	[ "$(rdma resource show qp link "$1/1" | grep -vc 'lqpn 1 ')" = 0 ] &&
		[ -z "$(rdma resource show mr)" ] &&
		[ -z "$(rdma resource show cm_id)" ]
}

dev_up() {
	if [ "$kind" = srdma ]; then
		modprobe srdma && rdma link add srdma0 type srdma netdev eth0 ||
			return 1
		dev=srdma0
	else
		modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0 ||
			return 1
		dev=rxe0
	fi
	roce2_ipv4_gid "$dev" > /dev/null
}

# ---------------------------------------------------------------- NVMe-oF

NVME_SIZE_MB=64

# fio over NVMe-oF, its outcome asserted from its JSON: no job error (a
# verify mismatch is fatal and sets it), and the bytes written and read.
# usage: storage_fio NAME DEV FIO_ARGS...
storage_fio() {
	local name=$1 dev=$2
	shift 2
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		--verify=crc32c --verify_fatal=1 --random_generator=lfsr \
		--output-format=json --output=/tmp/sp.fio.json "$@" \
		2> /tmp/sp.fio.err
	local rc=$?
	python3 - /tmp/sp.fio.json "$name" <<'EOF' || return 1
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index("{"):])
bad = 0
for j in doc["jobs"]:
    w, r = j["write"], j["read"]
    print("# fio %s: error %d, written %d MiB at %d KiB/s, read %d MiB at %d KiB/s, %d ms"
          % (sys.argv[2], j["error"], w["io_bytes"] >> 20, w["bw"],
             r["io_bytes"] >> 20, r["bw"], j["job_runtime"]))
    if j["error"]:
        print("fio job %s: error %d" % (j["jobname"], j["error"]))
        bad = 1
    if r["io_bytes"] == 0:
        print("fio job %s: nothing read back" % j["jobname"])
        bad = 1
sys.exit(bad)
EOF
	grep -i verify /tmp/sp.fio.err && { echo "fio: verify errors"; return 1; }
	[ $rc = 0 ] || { echo "fio exited $rc: $(tail -5 /tmp/sp.fio.err)"; return 1; }
}

# The namespace's block device, once it has its full size.
host_dev() {
	local d
	d=$(nvme_storage_dev) && [ -b "$d" ] &&
		[ "$(blockdev --getsize64 "$d")" = $((NVME_SIZE_MB << 20)) ] &&
		echo "$d"
}

host_connect() {
	modprobe nvme-rdma || fail "modprobe nvme-rdma"
	nvme_storage_connect "$@" > /dev/null ||
		fail "nvme connect -t rdma -a $STORAGE_ADDR: $(dmesg | tail -5)"
	wait_for 30 host_dev || fail "no namespace of $NVME_SIZE_MB MiB"
	host_dev > /tmp/sp.dev
	echo "# $(host_dev): controller $(ls /sys/class/nvme | head -1)," \
		"$(cat /sys/block/"$(basename "$(host_dev)")"/queue/max_hw_sectors_kb) KiB per I/O at most"
}

# Random writes of 4 KiB to 1 MiB at queue depth 32, each verified soon
# after (verify_backlog), then 4 KiB to 256 KiB at depth 1, then a pure
# read pass at depth 32 that verifies the first job's blocks again.
host_fio() {
	local dev big=$1 small=$2
	dev=$(cat /tmp/sp.dev)
	storage_fio qd32 "$dev" --rw=randwrite --bsrange=4k-1m --iodepth=32 \
		--offset=0 --size="${big}m" --verify_backlog=16 ||
		fail "fio at queue depth 32"
	storage_fio qd1 "$dev" --rw=randwrite --bsrange=4k-256k --iodepth=1 \
		--offset=$((NVME_SIZE_MB - small))m --size="${small}m" \
		--verify_backlog=4 || fail "fio at queue depth 1"
	storage_fio qd32_read "$dev" --rw=randwrite --bsrange=4k-1m \
		--iodepth=32 --offset=0 --size="${big}m" --verify_only ||
		fail "fio read-back verify"
}

# dmesg line count when the host connected.
host_mark=0

# Disconnect, no error, reset or reconnect logged, the counters, unload.
host_disconnect() {
	local before=$1 after d e
	if nvme_errors_since "$host_mark" > /tmp/sp.nvme_err; then
		cat /tmp/sp.nvme_err
		[ -n "${STORAGE_RESETS_OK:-}" ] ||
			fail "NVMe errors, resets or reconnects logged"
		echo "# $(grep -c 'error recovery' /tmp/sp.nvme_err) error recoveries, allowed: $STORAGE_RESETS_OK"
	fi
	nvme disconnect -n "$STORAGE_NQN" > /dev/null || fail "nvme disconnect"
	wait_for 10 nvme_storage_gone || fail "namespace still there"
	modprobe -r nvme-rdma || fail "modprobe -r nvme-rdma"
	if [ "$kind" = srdma ]; then
		after=$(dev_counters)
		e=""
		for d in fast_reg remote_invalidate retransmits rx_out_of_sequence \
			 fast_reg_errors remote_invalidate_errors remote_access_errors; do
			e="$e $d +$(($(cnt $d "$after") - $(cnt $d "$before")))"
		done
		echo "# counters:$e"
		for d in fast_reg remote_invalidate; do
			[ "$(cnt $d "$after")" -gt "$(cnt $d "$before")" ] ||
				fail "$d did not grow"
		done
		for d in fast_reg_errors remote_invalidate_errors remote_access_errors; do
			[ "$(cnt $d "$after")" = "$(cnt $d "$before")" ] ||
				fail "$d grew"
		done
	fi
	wait_for 20 nothing_left_on "$dev" ||
		fail "resources left: $(rdma resource show)"
}

target_setup() {
	nvmet_setup "$NVME_SIZE_MB" || fail "nvmet setup on $STORAGE_ADDR"
}

target_teardown() {
	local before=$1 after d
	nvme_storage_teardown
	lsmod | grep -qE '^nvmet_rdma|^nvmet ' && fail "nvmet modules still loaded"
	if [ "$kind" = srdma ]; then
		after=$(dev_counters)
		echo "# counters: retransmits +$(($(cnt retransmits "$after") - $(cnt retransmits "$before")))" \
			"rx_out_of_sequence +$(($(cnt rx_out_of_sequence "$after") - $(cnt rx_out_of_sequence "$before")))"
		for d in remote_access_errors fast_reg_errors; do
			[ "$(cnt $d "$after")" = "$(cnt $d "$before")" ] ||
				fail "$d grew"
		done
	fi
	wait_for 20 nothing_left_on "$dev" ||
		fail "resources left: $(rdma resource show)"
}

# nvme_pair ROLE NAME FIRST HOST_STEPS: the frame of an NVMe-oF phase
# over two message ports. The target sets up ($tag.NAME_target_setup),
# sends its status, and once the host is done tears down
# ($tag.NAME_target_teardown). The host reports $tag.FIRST failed if the
# target's set-up failed, else runs the function HOST_STEPS (which sees
# tag and before); then it disconnects and unloads nvme-rdma whatever
# happened, and tells the target.
nvme_pair() {
	local role=$1 name=$2 first=$3 steps=$4 before tag r p0 p1
	next_port; p0=$port
	next_port; p1=$port
	before=$(dev_counters)
	if [ "$role" = target ]; then
		tag="$kind-serves-$peer_kind"
		STORAGE_ADDR=$me_ip
		run "$tag.${name}_target_setup" target_setup
		echo $? | msg_send $p0
		msg_recv $p1 > /dev/null
		run "$tag.${name}_target_teardown" target_teardown "$before"
		return
	fi
	tag="$kind-to-$peer_kind"
	STORAGE_ADDR=$peer
	r=$(msg_recv $p0)
	if [ "$r" != 0 ]; then
		echo "target set-up failed on $peer ($r)" > "$LOG"
		report "$tag.$first" 1 0
	else
		host_mark=$(dmesg | wc -l)
		"$steps"
	fi
	nvme disconnect -n "$STORAGE_NQN" > /dev/null 2>&1
	modprobe -r nvme-rdma 2>/dev/null
	echo "done" | msg_send $p1
}

# nvme_pair's host steps for nvme_phase: connect, fio, disconnect.
nvme_host_steps() {
	run "$tag.nvme_connect" host_connect &&
		run "$tag.nvme_fio" host_fio "$big" "$small"
	run "$tag.nvme_disconnect" host_disconnect "$before"
}

# nvme_phase ROLE BIG SMALL: one target, one host; fio over BIG MiB at
# depth 32 and SMALL MiB at depth 1.
nvme_phase() {
	local big=$2 small=$3
	nvme_pair "$1" nvme nvme_connect nvme_host_steps
}

# ---------------------------------------------------------------- NFS

# A tree of random files in $1 of about $2 MiB: odd small sizes, then
# files of 4 MiB less 3 bytes in two directories.
nfs_tree_mb() {
	local dir=$1 mb=$2 s i=0 left
	mkdir -p "$dir/a/b" || return 1
	for s in 1 4095 4096 65537 1048576; do
		head -c "$s" /dev/urandom > "$dir/f$i" || return 1
		i=$((i + 1))
	done
	left=$(((mb << 20) - 1183325))
	while [ $left -gt 0 ]; do
		head -c 4194301 /dev/urandom > "$dir/a/b/g$i" || return 1
		left=$((left - 4194301))
		i=$((i + 1))
	done
}

nfs_server_setup() {
	nfsd_setup || fail "nfsd setup: $(cat /proc/fs/nfsd/portlist 2>&1)"
}

# The server's tree for NFS version $1, $2 MiB, and its sums.
nfs_server_tree() {
	nfs_tree_mb "$STORAGE_EXPORT/srv$1" "$2" || fail "tree srv$1"
	(cd "$STORAGE_EXPORT" && nfs_sums . | grep " ./srv$1/") > /tmp/sp.srv.sums
}

# The client's sums ($2) of what it wrote with NFS version $1 against
# what landed in the export; then both trees go.
nfs_server_check() {
	local v=$1 got
	[ "$(head -1 "$2")" = ok ] || fail "the client failed: $(cat "$2")"
	got=$(cd "$STORAGE_EXPORT" && nfs_sums . | grep " ./in$v/")
	[ -n "$got" ] || fail "nothing written to in$v"
	[ "$got" = "$(tail -n +2 "$2")" ] ||
		fail "vers=$v: files the client wrote differ on the server"
	echo "# vers=$v: $(du -sm "$STORAGE_EXPORT/in$v" | cut -f1) MiB written by the client"
	rm -rf "$STORAGE_EXPORT/in$v" "$STORAGE_EXPORT/srv$v"
}

nfs_server_teardown() {
	nfs_storage_teardown
	lsmod | grep -q '^nfsd ' && fail "nfsd still loaded"
	wait_for 20 nothing_left_on "$dev" ||
		fail "resources left: $(rdma resource show)"
}

# Mount with NFS version $1 over RDMA, copy a tree of $2 MiB in, remount
# (nothing from the client's cache), read it back and the server's tree
# out; compare with the sums the server sent ($3). The sums of what it
# wrote go to /tmp/sp.in.sums for the server.
nfs_client_roundtrip() {
	local v=$1 mb=$2 sums=$3 opts=proto=rdma,port=20049 src=$STORAGE_ADDR:/
	[ "$(head -1 "$sums")" = ok ] || fail "NFS server set-up failed on $peer"
	[ "$v" = 3 ] && opts=$opts,nolock,mountproto=tcp &&
		src=$STORAGE_ADDR:$STORAGE_EXPORT
	mkdir -p "$STORAGE_MNT"
	rm -rf "/tmp/sp.in$v" "/tmp/sp.out$v"
	nfs_tree_mb "/tmp/sp.in$v" "$mb" || fail "tree"
	mount -t nfs -o "vers=$v,$opts" "$src" "$STORAGE_MNT" ||
		fail "mount vers=$v over RDMA"
	grep " $STORAGE_MNT " /proc/mounts | grep -q 'proto=rdma' ||
		fail "not mounted over RDMA: $(grep " $STORAGE_MNT " /proc/mounts)"
	cp -r "/tmp/sp.in$v" "$STORAGE_MNT/in$v" || fail "copy in"
	umount "$STORAGE_MNT" || fail "umount"
	mount -t nfs -o "vers=$v,$opts" "$src" "$STORAGE_MNT" || fail "remount"
	cp -r "$STORAGE_MNT/srv$v" "/tmp/sp.out$v" || fail "copy out"
	[ "$(nfs_sums "/tmp/sp.in$v")" = "$(nfs_sums "$STORAGE_MNT/in$v")" ] ||
		fail "vers=$v: files written read back different"
	[ "$(nfs_sums "/tmp/sp.out$v" | sed "s| \./| ./srv$v/|")" = \
	  "$(tail -n +2 "$sums")" ] ||
		fail "vers=$v: files read differ from the server's"
	umount "$STORAGE_MNT" || fail "umount vers=$v"
	echo "# vers=$v: $(du -sm "/tmp/sp.in$v" | cut -f1) MiB in," \
		"$(du -sm "/tmp/sp.out$v" | cut -f1) MiB out"
	{ echo ok; nfs_sums "/tmp/sp.in$v" | sed "s| \./| ./in$v/|"; } \
		> /tmp/sp.in.sums
	rm -rf "/tmp/sp.in$v" "/tmp/sp.out$v"
}

nfs_client_teardown() {
	modprobe -r nfsv4 nfsv3 nfs rpcrdma 2>/dev/null
	lsmod | grep -q '^rpcrdma ' && fail "rpcrdma still loaded"
	wait_for 20 nothing_left_on "$dev" ||
		fail "resources left: $(rdma resource show)"
}

# nfs_phase ROLE MB: NFSv3, then NFSv4.2 (which waits out the server's
# grace period meanwhile); per version the server makes its tree and
# sends its sums, the client sends the sums of what it wrote back.
nfs_phase() {
	local role=$1 mb=$2 tag p0 p1 v
	if [ "$role" = server ]; then
		tag="$kind-serves-$peer_kind"
		STORAGE_ADDR=$me_ip
		run "$tag.nfs_server_setup" nfs_server_setup
		for v in 3 4.2; do
			next_port; p0=$port
			next_port; p1=$port
			if run "$tag.nfs_v$v.tree" nfs_server_tree $v "$mb"; then
				{ echo ok; cat /tmp/sp.srv.sums; } | msg_send $p0
			else
				echo fail | msg_send $p0
			fi
			msg_recv $p1 > /tmp/sp.client.sums
			run "$tag.nfs_v$v.check" nfs_server_check $v /tmp/sp.client.sums
		done
		run "$tag.nfs_server_teardown" nfs_server_teardown
		return
	fi
	tag="$kind-to-$peer_kind"
	STORAGE_ADDR=$peer
	for v in 3 4.2; do
		next_port; p0=$port
		next_port; p1=$port
		msg_recv $p0 > /tmp/sp.srv.sums
		echo fail > /tmp/sp.in.sums
		run "$tag.nfs_v$v" nfs_client_roundtrip $v "$mb" /tmp/sp.srv.sums
		umount -f "$STORAGE_MNT" 2>/dev/null
		msg_send $p1 < /tmp/sp.in.sums
	done
	run "$tag.nfs_client_teardown" nfs_client_teardown
}

# ---------------------------------------------------------------- main

echo "KTAP version 1"
srdma_install_module || { echo "not ok 1 $me.install_module"; exit 1; }
modprobe ib_uverbs
modprobe rdma_cm
dev_up || { echo "not ok 1 $me.link_add"; exit 1; }
ping -c 1 -W 5 "$peer" > /dev/null	# resolve the neighbour
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config

# role ROLE_IN_A: this guest's role when guest a has ROLE_IN_A.
role() {
	if [ "$me" = a ]; then echo "$1"; else
		case $1 in host) echo target ;; target) echo host ;;
		client) echo server ;; server) echo client ;; esac
	fi
}

if [ "$mode" = quick ]; then
	nvme_phase "$(role host)" 12 2
	nfs_phase "$(role client)" 8
	if [ "$kind" != "$peer_kind" ]; then
		nvme_phase "$(role target)" 12 2
		nfs_phase "$(role server)" 8
	fi
else
	. "$here/storage-long.sh"
fi

# The device goes, its module unloads, the log is clean.
final() {
	nothing_left_on "$dev" || fail "resources left: $(rdma resource show)"
	if [ -e "/sys/class/infiniband/$dev" ]; then
		rdma link delete "$dev" || fail "rdma link delete $dev"
	fi
	if [ "$kind" = srdma ]; then
		modprobe -r srdma || fail "rmmod srdma"
	else
		modprobe -r rdma_rxe || fail "rmmod rdma_rxe"
	fi
	[ -z "$(rdma resource show)" ] || fail "resources: $(rdma resource show)"
	boot_reports
	bad=$(test_log | dmesg_bad)
	[ -z "$bad" ] || fail "kernel log: $bad"
}
[ -n "$(rdma statistic show 2>/dev/null)" ] &&
	rdma statistic show | sed 's/^/# /'
run "$kind.unload_and_dmesg" final
exit 0

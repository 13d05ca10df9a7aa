#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The long storage runs (make check-storage), sourced by storage-peer.sh
# with "long": 1% loss, link failure under fio, rdma link delete under
# an NVMe-oF controller and an NFS mount. With "delete", the link delete
# phases alone.
# Its variables and helpers are storage-peer.sh's.
# shellcheck disable=SC2154

# ---------------------------------------------------------------- 1% loss

loss_on() {
	modprobe sch_netem && tc qdisc replace dev eth0 root netem loss 1%
}

# The packets netem dropped on eth0 so far.
netem_drops() {
	tc -s qdisc show dev eth0 | awk '/dropped/ { sub(",", "", $7); print $7; exit }'
}

loss_check() {
	local d
	d=$(netem_drops)
	echo "# netem dropped $d packets on eth0"
	[ "${d:-0}" -gt 0 ] || fail "netem dropped nothing: $(tc -s qdisc show dev eth0)"
	tc qdisc del dev eth0 root || fail "tc qdisc del"
}

# rdma_rxe resends a lost packet only when its retransmission timer
# expires (hundreds of milliseconds with rdma_cm's defaults for RoCE):
# against it, the first long run moved 689 KiB/s at depth 32 and 38 KiB/s
# at depth 1, and nvme-rdma's 30 s I/O timeout reset the controller every
# 40 s or so, data intact. With rxe on either side the loss runs are therefore short
# (8 and 2 MiB of fio, 16 MiB trees) and controller resets are allowed,
# counted and printed; between srdma devices none may occur.
loss_big=48 loss_small=8 loss_nfs=256
if [ "$kind" = rxe ] || [ "$peer_kind" = rxe ]; then
	loss_big=8 loss_small=2 loss_nfs=16
	STORAGE_RESETS_OK="rdma_rxe under loss"
fi
if [ "$mode" = long ]; then
run "$kind.loss_on" loss_on
nvme_phase "$(role host)" $loss_big $loss_small
nfs_phase "$(role client)" $loss_nfs
if [ "$kind" != "$peer_kind" ]; then
	nvme_phase "$(role target)" $loss_big $loss_small
	nfs_phase "$(role server)" $loss_nfs
fi
run "$kind.loss_dropped" loss_check
unset STORAGE_RESETS_OK
fi

# ---------------------------------------------------------------- link down

# eth0 of the host down for 10 s in the middle of fio: nvme-rdma's error
# recovery reconnects every 2 s until the link is back; queued I/O is
# retried; fio must finish with every block verified.
host_link_flap() {
	local dev fpid mark st
	dev=$(cat /tmp/sp.dev)
	mark=$(dmesg | wc -l)
	storage_fio flap "$dev" --rw=randwrite --bsrange=4k-1m --iodepth=32 \
		--offset=0 --size=48m --verify_backlog=16 --loops=4 &
	fpid=$!
	sleep 5
	kill -0 $fpid 2>/dev/null || fail "fio finished before the link went down"
	ip link set eth0 down || fail "link down"
	sleep 10
	ip link set eth0 up || fail "link up"
	echo "# eth0 down for 10 s, 5 s into fio"
	wait $fpid || fail "fio across the link failure"
	dmesg | tail -n +$((mark + 1)) | grep -E 'nvme' | sed 's/^/# dmesg: /' | tail -12
	dmesg | tail -n +$((mark + 1)) | grep -q 'Successfully reconnected' ||
		fail "no reconnect logged"
	st=$(cat /sys/class/nvme/*/state)
	[ "$st" = live ] || fail "controller state $st"
}

# nvme_pair's host steps for the link flap: connect with a long
# controller loss timeout, flap, disconnect.
flap_host_steps() {
	run "$tag.flap_connect" host_connect --ctrl-loss-tmo=120 \
		--reconnect-delay=2 &&
		run "$tag.link_down_10s" host_link_flap
	# The reconnect is expected: host_disconnect looks for errors after
	# it. (run's subshell cannot set host_mark for us.)
	host_mark=$(dmesg | wc -l)
	run "$tag.flap_disconnect" host_disconnect "$before"
}

[ "$mode" = long ] && nvme_pair "$(role host)" flap link_down_10s flap_host_steps

# ---------------------------------------------------------------- link delete

# rdma link delete of a device that an NVMe-oF controller and an NFS mount
# use, under load, on the side named by $1 (host or target). It must
# return, the ULPs must let go, the modules must unload, the log must stay
# clean. What happened is logged as "# " lines either way.

# Wait up to $1 s for process $2; 0 if it ended.
wait_pid() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# Delete this guest's device in the background and wait for it.
delete_dev() {
	local pid t0 rc
	t0=$(date +%s.%N)
	rdma link delete "$dev" > /tmp/sp.del.log 2>&1 &
	pid=$!
	if ! wait_pid 120 $pid; then
		echo "rdma link delete $dev: still running after 120 s: $(cat /proc/$pid/stack 2>/dev/null | tr '\n' ' ')"
		echo w > /proc/sysrq-trigger
		return 1
	fi
	wait $pid
	rc=$?
	echo "# rdma link delete $dev: exit $rc after $(echo "$(date +%s.%N) - $t0" | bc) s $(cat /tmp/sp.del.log)"
	[ $rc = 0 ]
}

# On the host: controller and mount up, load on both.
del_host_load() {
	local dev
	dev=$(cat /tmp/sp.dev)
	mkdir -p "$STORAGE_MNT"
	mount -t nfs -o "vers=4.2,proto=rdma,port=20049,soft,timeo=100,retrans=2" \
		"$STORAGE_ADDR:/" "$STORAGE_MNT" || fail "mount NFSv4.2 over RDMA"
	(fio --name=del --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randwrite --bsrange=4k-1m --iodepth=32 --size=48m \
		--time_based --runtime=600 --output=/tmp/sp.delfio \
		> /dev/null 2>&1; echo $? > /tmp/sp.delfio.rc) &
	echo $! > /tmp/sp.delfio.pid
	(dd if=/dev/zero of="$STORAGE_MNT/del" bs=1M count=256 conv=fsync \
		> /tmp/sp.delcp 2>&1; echo $? > /tmp/sp.delcp.rc) &
	echo $! > /tmp/sp.delcp.pid
	sleep 3
	echo "# load running: fio on $dev, dd into the NFS mount"
}

# On the host, after the delete (its own or the target's): what the ULPs
# did, then the clean-up.
del_host_after() {
	local who=$1 p st i pid c t0
	sleep 5
	for i in $(seq 60); do
		st=$(cat /sys/class/nvme/*/state 2>/dev/null)
		[ "$st" != live ] && break
		sleep 1
	done
	echo "# $who deleted its device; controller state: ${st:-gone}"
	dmesg | tail -n +$((host_mark + 1)) | grep -iE 'nvme|rpcrdma|nfs|srdma|rxe' |
		sed 's/^/# dmesg: /' | tail -15
	# When the host deleted its device, the load must end by itself: the
	# controller goes with the device, dd's soft mount times out. When
	# the target did, nvme-rdma reconnects, and each attempt waits out
	# the CM's retries of a REQ nobody answers (over a minute, on any
	# RoCE device), ctrl_loss_tmo allowing ten: disconnect as a user
	# would, which must end fio.
	if [ "$who" = target ]; then
		case $st in
		resetting|connecting) ;;
		*) fail "controller state ${st:-gone}, not reconnecting" ;;
		esac
		t0=$SECONDS
		timeout 120 nvme disconnect -n "$STORAGE_NQN" > /dev/null ||
			fail "nvme disconnect of a controller whose target is gone"
		echo "# nvme disconnect: $((SECONDS - t0)) s"
	fi
	for p in delfio delcp; do
		pid=$(cat /tmp/sp.$p.pid)
		if wait_pid 150 "$pid"; then
			echo "# $p ended: exit $(cat /tmp/sp.$p.rc 2>/dev/null) $(tail -2 /tmp/sp.$p 2>/dev/null | tr '\n' ' ')"
		else
			echo "$p still running 150 s after the delete:"
			for c in $(pgrep -P "$pid"); do
				cat /proc/"$c"/stack
			done
			kill "$pid" $(pgrep -P "$pid") 2>/dev/null
			return 1
		fi
	done
	timeout 60 umount -f "$STORAGE_MNT" ||
		{ echo "# umount -f failed, umount -l"; umount -l "$STORAGE_MNT"; }
	nvme disconnect -n "$STORAGE_NQN" > /dev/null 2>&1
	wait_for 60 nvme_storage_gone || fail "namespace still there"
	timeout 60 modprobe -r nvme-rdma || fail "nvme-rdma does not unload"
	# With the target's device gone, xprtrdma lets go of its transport
	# only once its reconnect attempt (a CM REQ retried for over a
	# minute) has failed.
	t0=$SECONDS
	wait_for 300 modprobe -r nfsv4 nfsv3 nfs rpcrdma ||
		fail "NFS modules do not unload: $(lsmod | grep -E 'nfs|rpcrdma')"
	echo "# NFS modules unloaded after $((SECONDS - t0)) s"
}

del_host_self() {
	del_host_load || return 1
	delete_dev || fail "rdma link delete"
	del_host_after host || return 1
	unload_check
}

# The device's module unloads and the device comes back for what follows.
unload_check() {
	local bad
	if [ -e "/sys/class/infiniband/$dev" ]; then
		echo "$dev still there"; return 1
	fi
	if [ "$kind" = srdma ]; then
		timeout 60 modprobe -r srdma || fail "rmmod srdma: $(lsmod | grep srdma)"
	else
		timeout 60 modprobe -r rdma_rxe || fail "rmmod rdma_rxe"
	fi
	boot_reports
	bad=$(test_log | dmesg_bad)
	[ -z "$bad" ] || fail "kernel log: $bad"
	dev_up || fail "rdma link add after the delete"
}

# On the target: nvmet and nfsd up; the delete and clean-up.
del_target_setup() {
	target_setup || return 1
	nfsd_setup || fail "nfsd setup"
}

del_target_self() {
	delete_dev || fail "rdma link delete"
	sleep 5
	dmesg | tail -n +$((host_mark + 1)) | grep -iE 'nvmet|rpcrdma|svcrdma|nfsd|srdma' |
		sed 's/^/# dmesg: /' | tail -15
}

# nvmet and nfsd unloaded; nvmet lets go of the controllers of a host
# that went away from a work item, a moment later.
target_mods_gone() {
	modprobe -r nvmet-rdma nvmet nfsd 2>/dev/null
	! lsmod | grep -qE '^nvmet|^nfsd '
}

# What nfsd's threads are doing (each holds a reference on the module).
nfsd_threads_dump() {
	local t
	echo "# nfsd threads: $(cat /proc/fs/nfsd/threads 2>/dev/null || echo '(nfsd fs gone)')"
	for t in $(pgrep -x nfsd); do
		echo "# nfsd $t: $(cat /proc/"$t"/stack 2>/dev/null | awk '{ print $1 }' | tr '\n' ' ')"
	done
	echo "# mounts: $(grep -E 'nfsd|rpc_pipefs' /proc/mounts | awk '{ print $2 }' | tr '\n' ' ')"
	echo "# processes: $(ps -e -o comm= | grep -E 'rpc|nfs|mountd|idmap' | sort | uniq -c | tr -s ' \n' ' ')"
}

# When the host deleted its device, nothing told this side: the host's
# CM could not send its DREQs through a device going away. nvmet lets go
# when the controller's keep-alive expires; svcrdma keeps its transport
# (and nfsd its module and the transport its QP on $dev) until nfsd ages
# it out, minutes later, or until this side's device goes, which the
# next phase does. So only then must everything go.
del_target_teardown() {
	local t0=$SECONDS t1 pid
	nvme_storage_teardown
	t1=$SECONDS
	# nfsd's threads stop first, watched: a thread that does not stop
	# keeps the module.
	rpc.nfsd 0 > /dev/null 2>&1 &
	pid=$!
	if ! wait_pid 20 $pid; then
		echo "# rpc.nfsd 0 still running after 20 s: $(awk '{ print $1 }' /proc/$pid/stack 2>/dev/null | tr '\n' ' ')"
		nfsd_threads_dump
	fi
	wait $pid
	echo "# rpc.nfsd 0: exit $? after $((SECONDS - t1)) s"
	nfs_storage_teardown
	echo "# teardown: nvmet $((t1 - t0)) s, nfsd $((SECONDS - t1)) s"
	if [ "$1" = target ]; then
		# nvmet and nfsd must let go. nfsd once kept 4 module
		# references here, with no nfsd thread left and its fs
		# unmounted, while two rpc.mountd processes still held its
		# cache channels open; nfs_storage_teardown stops every
		# rpc.mountd (both unloaded in 2 s since).
		if ! wait_for 60 target_mods_gone; then
			lsmod | grep -qE '^nvmet' &&
				fail "nvmet still loaded: $(lsmod | grep -E '^nvmet')"
			nfsd_threads_dump
			fail "nfsd still loaded after its client went: $(lsmod | awk '$1 == "nfsd" { print "refcount " $3 }')"
		fi
		unload_check
	elif ! wait_for 30 target_mods_gone; then
		echo "# still loaded after the host's device went: $(lsmod | grep -E '^nvmet|^nfsd ' | awk '{ print $1 }' | tr '\n' ' ')"
		echo "# left on $dev: $(rdma resource show | tr '\n' ' ')"
	fi
}

# delete_phase ROLE DELETER
delete_phase() {
	local role=$1 deleter=$2 tag r p0 p1 p2 p3
	next_port; p0=$port
	next_port; p1=$port
	next_port; p2=$port
	next_port; p3=$port
	host_mark=$(dmesg | wc -l)
	if [ "$role" = target ]; then
		tag="$kind-serves-$peer_kind"
		STORAGE_ADDR=$me_ip
		run "$tag.del_target_setup" del_target_setup
		echo $? | msg_send $p0
		msg_recv $p1 > /dev/null	# load running
		if [ "$deleter" = target ]; then
			run "$tag.link_delete_on_target" del_target_self
		fi
		echo deleted | msg_send $p2
		msg_recv $p3 > /dev/null	# host cleaned up
		run "$tag.del_target_teardown" del_target_teardown "$deleter"
		return
	fi
	tag="$kind-to-$peer_kind"
	STORAGE_ADDR=$peer
	r=$(msg_recv $p0)
	if [ "$r" != 0 ]; then
		echo "target set-up failed on $peer ($r)" > "$LOG"
		report "$tag.link_delete" 1 0
		echo go | msg_send $p1
		msg_recv $p2 > /dev/null
	else
		run "$tag.del_connect" host_connect --ctrl-loss-tmo=20 \
			--reconnect-delay=2
		if [ "$deleter" = host ]; then
			echo go | msg_send $p1
			msg_recv $p2 > /dev/null
			run "$tag.link_delete_on_host" del_host_self
		else
			run "$tag.del_load" del_host_load
			echo go | msg_send $p1
			msg_recv $p2 > /dev/null
			run "$tag.link_delete_on_target" del_host_after target
		fi
	fi
	umount -f -l "$STORAGE_MNT" 2>/dev/null
	nvme disconnect -n "$STORAGE_NQN" > /dev/null 2>&1
	modprobe -r nvme-rdma nfsv4 nfsv3 nfs rpcrdma 2>/dev/null
	echo "done" | msg_send $p3
}

delete_phase "$(role host)" host
# The target deleting its own device: srdma's, or with "delete" (the
# delete phases alone, storage-run delete) any kind, to compare.
if [ "$mode" = delete ] ||
   [ "$([ "$me" = b ] && echo "$kind" || echo "$peer_kind")" = srdma ]; then
	delete_phase "$(role host)" target
fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# UCX and Open MPI across two guests on one virtual wire (scripts/vm/run2).
# Usage, in both guests:
#   hpc-peer.sh KIND_A KIND_B [quick|check|full|bench]    KIND: srdma, rxe
# Guest a binds a KIND_A device to eth0 and guest b a KIND_B device, each
# named after its kind (srdma0, rxe0). Guest b runs sshd with a key guest
# a made for the run and sent over TCP; guest a launches everything on
# both: ucx_perftest's server on b through ssh and its client here, and
# mpirun with two ranks in each guest (Open MPI's ssh launcher). In each
# guest /tmp/hpc-env.sh sets UCX_NET_DEVICES to its own device (and, for
# rdma_rxe, UCX_UD_VERBS_ETH_DGID_CHECK=n, see Documentation/hpc.rst), so
# one command line serves both. With "quick" only UCX's tag latency and
# bandwidth over rc_verbs and MPI with the UCX PML run; "check" (make
# check) adds tag bandwidth over ud_verbs; "full" (make check-hpc, the
# default) adds tag latency over ud_verbs, UCX's put, get and
# fetch-and-add, MPI over the TCP BTL and a run under 1% loss; with "bench" (make bench, tools/bench/hpc-run) no test,
# the benchmark's RESULT lines.
#
# Guest a prints one KTAP line per test (KIND_A-to-KIND_B.NAME), guest b
# one for its teardown; scripts/run-tests prefixes them with a. and b.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/lib.sh
. "$here/../lib.sh"
# shellcheck source=selftests/tests/ucx.sh
. "$here/../tests/ucx.sh"	# ucx_final

me=$SRDMA_VM_NAME
peer=$SRDMA_PEER_IP
mode=${3:-full}
if [ "$me" = a ]; then kind=$1; peer_kind=$2; else kind=$2; peer_kind=$1; fi
me_ip=$(ip -4 -o addr show eth0 | awk '{ sub("/.*", "", $4); print $4 }')
dev=${kind}0
tag=$kind-to-$peer_kind
LOG=/tmp/hpc.log
KEY=/tmp/hpc_key
SSH_OPTS="-i $KEY -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=30"
# Every ssh after the first goes over its connection (the key exchange
# takes seconds under emulation, and the tests run ssh dozens of times).
SSH_OPTS+=" -o ControlMaster=auto -o ControlPath=/tmp/hpc-ssh-%C -o ControlPersist=900"
# ucx_perftest's rendezvous port, as in ucx.sh.
PT_PORT=13337

msg_send() { python3 "$here/storage-msg.py" send "$peer" "$1"; }
msg_recv() { python3 "$here/storage-msg.py" recv "$1" "${2:-900}"; }
ssh_peer() { ssh $SSH_OPTS "root@$peer" "$@"; }

n=0
# run NAME FUNC [ARGS]: FUNC in a subshell (fail ends it), one KTAP line;
# a failure's log, or a pass's measurements (lines starting "# "), follow.
run() {
	local name=$1 t0 rc
	shift
	t0=$SECONDS
	( set -u; "$@" ) > "$LOG" 2>&1
	rc=$?
	n=$((n + 1))
	if [ $rc = 0 ]; then
		echo "ok $n $name"
	else
		echo "not ok $n $name"
		grep -v '^# ' "$LOG" | tail -30 | sed 's/^/# /'
	fi
	grep '^# ' "$LOG"
	echo "# $name: $((SECONDS - t0)) s"
	return $rc
}

setup_dev() {
	srdma_install_module || return 1
	modprobe ib_uverbs || return 1
	if [ "$kind" = srdma ]; then
		modprobe srdma && rdma link add "$dev" type srdma netdev eth0
	else
		modprobe rdma_rxe && rdma link add "$dev" type rxe netdev eth0
	fi || return 1
	ping -c 1 -W 5 "$peer" > /dev/null
	# The environment of every UCX process in this guest.
	{
		echo '#!/bin/bash'
		echo "export RDMAV_DRIVERS=$RDMAV_DRIVERS"
		echo "export UCX_NET_DEVICES=$dev:1"
		[ "$kind" = rxe ] && echo "export UCX_UD_VERBS_ETH_DGID_CHECK=n"
		echo 'exec "$@"'
	} > /tmp/hpc-env.sh && chmod +x /tmp/hpc-env.sh
}

# Guest b: sshd for guest a's key, then wait until a is done.
serve() {
	local pub
	pub=$(msg_recv 18301) || { echo "no key from $peer"; return 1; }
	mkdir -p /root/.ssh /run/sshd && chmod 700 /root/.ssh
	echo "$pub" > /root/.ssh/authorized_keys
	chmod 600 /root/.ssh/authorized_keys
	ssh-keygen -q -A || return 1
	/usr/sbin/sshd -o ListenAddress="$me_ip" -o PermitRootLogin=prohibit-password \
		-o UseDNS=no || return 1
	echo ready | msg_send 18302 || return 1
	msg_recv 18303 3000 > /dev/null || echo "no word from $peer"
}

# Guest a: a key for the run, sent to b; then b's sshd must answer.
connect() {
	rm -f "$KEY" "$KEY.pub"
	ssh-keygen -q -t ed25519 -N '' -f "$KEY" || return 1
	msg_send 18301 < "$KEY.pub" || return 1
	[ "$(msg_recv 18302 300)" = ready ] || { echo "$peer not ready"; return 1; }
	[ "$(ssh_peer cat /proc/sys/kernel/hostname)" != "" ] ||
		fail "ssh to $peer"
	ssh_peer test -x /tmp/hpc-env.sh || fail "no /tmp/hpc-env.sh on $peer"
}

# ucx2 TLS TEST SIZE ITERS KIND: ucx_perftest TEST, its server on b and
# client here, both over TLS; all ITERS iterations and a positive KIND
# figure (ucx_final).
ucx2() {
	local tls=$1 t=$2 size=$3 iters=$4 kindf=$5 spid i rc=0
	ssh_peer "UCX_TLS=$tls /tmp/hpc-env.sh timeout 180 ucx_perftest -p $PT_PORT" \
		> /tmp/server.log 2>&1 &
	spid=$!
	for ((i = 0; i < 60; i++)); do
		ssh_peer ss -Hltn "sport = :$PT_PORT" | grep -q . && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.5
	done
	UCX_TLS=$tls /tmp/hpc-env.sh timeout 180 ucx_perftest "$peer" \
		-p $PT_PORT -t "$t" -s "$size" -n "$iters" -w 10 \
		> /tmp/client.log 2>&1 || rc=$?
	wait "$spid" || { echo "server failed:"; cat /tmp/server.log; rc=1; }
	[ $rc = 0 ] || { echo "client failed:"; cat /tmp/client.log; return 1; }
	ucx_final "$iters" "$kindf"
}

ucx_rc() {
	local tls=rc_verbs,ud_verbs:aux
	ucx2 $tls tag_lat 8 500 lat || fail "tag_lat"
	ucx2 $tls tag_bw 65536 100 bw || fail "tag_bw"
	[ "$mode" = full ] || return 0
	ucx2 $tls ucp_put_bw 65536 100 bw || fail "ucp_put_bw"
	ucx2 $tls ucp_get 65536 100 bw || fail "ucp_get"
	ucx2 $tls ucp_fadd 8 200 rate || fail "ucp_fadd"
}

# Over UD alone, UCX's own reliability; make check's set has the
# bandwidth test only (64 KiB messages, segmented and acknowledged by UCX).
ucx_ud() {
	if [ "$mode" = full ]; then
		ucx2 ud_verbs tag_lat 8 500 lat || fail "tag_lat"
	fi
	ucx2 ud_verbs tag_bw 65536 100 bw || fail "tag_bw"
}

# mpi2 ARGS...: srdma_mpi_check on 4 ranks, two per guest, with mpirun's
# options ARGS; every part must print its "ok" line.
mpi2() {
	local out rc part
	out=$(timeout 600 mpirun --allow-run-as-root -np 4 \
		--host "$me_ip:2,$peer:2" --bind-to none \
		--mca plm_rsh_agent ssh --mca plm_rsh_args "$SSH_OPTS" \
		--mca oob_tcp_if_include eth0 "$@" \
		/tmp/hpc-env.sh "$B/selftests/srdma_mpi_check" 2>&1)
	rc=$?
	for part in p2p many coll rma; do
		grep -q "^ok $part (4 ranks)" <<< "$out" ||
			{ echo "no 'ok $part (4 ranks)'"; rc=1; }
	done
	[ $rc = 0 ] || echo "$out" | tail -30
	return $rc
}

# The UCX PML and osc over the devices: no shared memory, so ranks in one
# guest meet over its device too. The device must have carried it.
mpi_ucx() {
	local before
	[ "$kind" = srdma ] && before=$(counter rx_packets "$dev")
	mpi2 --mca pml ucx --mca osc ucx --mca btl self \
		-x UCX_TLS=rc_verbs,ud_verbs:aux,self || fail "UCX PML"
	[ "$kind" = srdma ] || return 0
	[ "$(counter remote_access_errors "$dev")" = 0 ] ||
		fail "remote access errors"
	[ $(($(counter rx_packets "$dev") - before)) -gt 1000 ] ||
		fail "$dev carried almost nothing"
}

mpi_tcp() {
	mpi2 --mca pml ob1 --mca btl tcp,self --mca osc pt2pt \
		--mca btl_tcp_if_include eth0 || fail "TCP BTL"
}

# 1% netem loss on both guests' eth0 (ssh and TCP retransmit too).
loss_on() {
	modprobe sch_netem && tc qdisc replace dev eth0 root netem loss 1% &&
		ssh_peer "modprobe sch_netem && tc qdisc replace dev eth0 root netem loss 1%"
}

under_loss() {
	loss_on || fail "netem"
	ucx2 rc_verbs,ud_verbs:aux tag_bw 65536 200 bw || fail "tag_bw"
	mpi_ucx
	tc qdisc del dev eth0 root
	ssh_peer tc qdisc del dev eth0 root
	if [ "$kind" = srdma ]; then
		echo "# retransmits $(counter retransmits "$dev")"
	fi
}

# make bench (tools/bench/hpc-run), mode "bench": RESULT lines, no test.
# MPI ping-pong, one rank per guest, over the UCX PML on the devices and,
# in the srdma pair, over the TCP BTL; ucx_perftest tag latency at 8 B and
# tag bandwidth at 64 KiB and 1 MiB over rc_verbs.
#   RESULT mpi LABEL SIZE LATENCY_US MB_PER_S
#   RESULT ucx LABEL TEST SIZE VALUE    (tag_lat: us; tag_bw: MB/s)
bench_mpi() {
	local label=$1
	shift
	timeout 900 mpirun --allow-run-as-root -np 2 \
		--host "$me_ip:1,$peer:1" --bind-to none \
		--mca plm_rsh_agent ssh --mca plm_rsh_args "$SSH_OPTS" \
		--mca oob_tcp_if_include eth0 "$@" \
		/tmp/hpc-env.sh "$B/selftests/srdma_mpi_pingpong" "$label" 50 \
		2>&1 | grep '^RESULT' || echo "# MPI ping-pong over $label failed"
}

bench_ucx() {
	local t=$1 size=$2 iters=$3 v
	ucx2 rc_verbs,ud_verbs:aux "$t" "$size" "$iters" \
		"$([ "$t" = tag_lat ] && echo lat || echo bw)" > /dev/null ||
		{ echo "RESULT ucx $kind $t $size NA"; return; }
	v=$(awk -v t="$t" '/^Final:/ { print (t == "tag_lat") ? $4 : $7 }' /tmp/client.log)
	echo "RESULT ucx $kind $t $size ${v:-NA}"
	bench_stats "ucx $t $size"
}

# The device's non-zero loss and retry counters so far, for the log.
bench_stats() {
	[ "$kind" = srdma ] || return 0
	echo "# STATS $1: $(cd /sys/class/infiniband/$dev/ports/1/hw_counters &&
		for c in tx_packets tx_resent_packets nak_received ack_timeouts \
			early_timeouts tail_loss_probes rnr_nak_sent \
			rnr_nak_received rx_out_of_sequence rx_duplicates; do
			echo -n "$c $(cat $c) "; done)"
}

bench() {
	bench_ucx tag_lat 8 2000
	bench_ucx tag_bw 65536 200
	bench_ucx tag_bw 1048576 40
	bench_mpi "$kind" --mca pml ucx --mca btl self \
		-x UCX_TLS=rc_verbs,ud_verbs:aux,self
	bench_stats "mpi $kind"
	[ "$kind" = srdma ] || return 0
	bench_mpi tcp --mca pml ob1 --mca btl tcp,self \
		--mca btl_tcp_if_include eth0
}

final() {
	pkill -x sshd
	rdma link delete "$dev" || fail "rdma link delete $dev"
	if [ "$kind" = srdma ]; then
		modprobe -r srdma || fail "rmmod srdma"
	else
		modprobe -r rdma_rxe || fail "rmmod rdma_rxe"
	fi
	boot_reports
	bad=$(test_log | dmesg_bad)
	[ -z "$bad" ] || fail "kernel log: $bad"
}

command -v ucx_perftest > /dev/null && command -v mpirun > /dev/null &&
	[ -x "$B/selftests/srdma_mpi_check" ] ||
	{ echo "ok 1 $tag # SKIP no UCX or Open MPI"; exit 0; }
setup_dev > "$LOG" 2>&1 || { echo "not ok 1 $tag.setup"; sed 's/^/# /' "$LOG"; exit 1; }

if [ "$me" = b ]; then
	run "$kind-serves-$peer_kind.sshd" serve
	run "$kind-serves-$peer_kind.unload_and_dmesg" final
	exit 0
fi

if [ "$mode" = bench ]; then
	connect > "$LOG" 2>&1 && bench || { echo "bench: no ssh to $peer"; cat "$LOG"; }
elif run "$tag.ssh" connect; then
	run "$tag.ucx_rc" ucx_rc
	[ "$mode" = quick ] || run "$tag.ucx_ud" ucx_ud
	run "$tag.mpi_ucx" mpi_ucx
	if [ "$mode" = full ]; then
		run "$tag.mpi_tcp" mpi_tcp
		run "$tag.loss1.ucx_mpi" under_loss
	fi
fi
echo done | msg_send 18303
run "$tag.unload_and_dmesg" final
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# RC data path in one guest: srdma0 on a veth, loopback to its own GID.

PERF_ARGS="-d srdma0 -x 1 -F"

test_rc_pingpong() {
	setup_bound_veth || fail "link add"
	client_server "ibv_rc_pingpong -d srdma0 -g 1 -n 50" \
		"ibv_rc_pingpong -d srdma0 -g 1 -n 50 127.0.0.1" ||
		fail "ibv_rc_pingpong"
	grep -q '50 iters in' /tmp/client.log || fail "no iteration report"
	[ "$(counter rx_bad_icrc)" = 0 ] || fail "ICRC errors"
}

test_rc_pingpong_events() {
	setup_bound_veth || fail "link add"
	client_server "ibv_rc_pingpong -d srdma0 -g 1 -n 50 -e" \
		"ibv_rc_pingpong -d srdma0 -g 1 -n 50 -e 127.0.0.1" ||
		fail "ibv_rc_pingpong -e"
	grep -q '50 iters in' /tmp/client.log || fail "no iteration report"
}

# ibv_rc_pingpong -t: its receive completions carry the device's clock
# (CLOCK_MONOTONIC, ns), of which it reports the gaps. 50 iterations give
# 49 gaps on each side, the client's mean about one iteration's time.
test_rc_pingpong_timestamps() {
	local f max min avg us
	setup_bound_veth || fail "link add"
	client_server "ibv_rc_pingpong -d srdma0 -g 1 -n 50 -t" \
		"ibv_rc_pingpong -d srdma0 -g 1 -n 50 -t 127.0.0.1" ||
		fail "ibv_rc_pingpong -t"
	for f in /tmp/server.log /tmp/client.log; do
		max=$(sed -n 's/^Max receive completion clock cycles = //p' $f)
		min=$(sed -n 's/^Min receive completion clock cycles = //p' $f)
		avg=$(sed -n 's/^Average receive completion clock cycles = \([0-9]*\).*/\1/p' $f)
		us=$(sed -n 's/^50 iters in .* = \([0-9]*\)\..* usec\/iter$/\1/p' $f)
		echo "# $(basename $f .log): gaps of $min to $max ns, mean $avg ns; $us us an iteration"
		[ -n "$max" ] && [ -n "$min" ] && [ -n "$avg" ] && [ -n "$us" ] ||
			{ cat $f; fail "no timestamp report in $f"; }
		[ "$min" -gt 0 ] && [ "$min" -le "$avg" ] && [ "$avg" -le "$max" ] ||
			fail "gaps out of order in $f"
	done
	# The client's clock starts at its first send; the server's earlier,
	# while it waits for the client (4 ms an iteration once on 6.12).
	[ $((avg * 4)) -ge $((us * 1000)) ] &&
		[ "$avg" -le $((us * 4000 + 4000)) ] ||
		fail "client: mean gap $avg ns, iterations of $us us"
}

# The completion clock is CLOCK_MONOTONIC as the CQ's maker sees it:
# srdma_cqex_test's timestamps case passes in a time namespace whose
# monotonic clock runs 100000 s ahead of the host's.
test_cq_timestamps_timens() {
	setup_bound_veth || fail "link add"
	[ "$(unshare --time --monotonic 100000 --fork \
		python3 -c 'import time; print(int(time.monotonic()))')" -ge 100000 ] ||
		fail "no time namespace with a monotonic offset"
	unshare --time --monotonic 100000 --fork "$B/selftests/srdma_cqex_test" \
		> /tmp/timens.log 2>&1
	grep -qE '^ok [0-9]+ cqex\.timestamps$' /tmp/timens.log ||
		{ grep -A12 'RUN.*cqex.timestamps' /tmp/timens.log; fail "timestamps in the namespace"; }
}

test_rc_pingpong_1m() {
	setup_bound_veth || fail "link add"
	client_server "ibv_rc_pingpong -d srdma0 -g 1 -n 10 -s 1048576" \
		"ibv_rc_pingpong -d srdma0 -g 1 -n 10 -s 1048576 127.0.0.1" ||
		fail "ibv_rc_pingpong -s 1048576"
	grep -q '20971520 bytes in' /tmp/client.log || fail "byte count"
}

# Data integrity (1 B to 1 MiB, multi-SGE, immediates), remote and local
# error paths, flushes, and WRITE/READ against a stopped process.
test_rc_xfer() {
	setup_bound_veth || fail "link add"
	srdma_xfer -d srdma0 > /tmp/server.log 2>&1 &
	spid=$!
	sleep 1
	timeout 300 srdma_xfer -d srdma0 -S $spid 127.0.0.1
	rc=$?
	kill $spid
	[ $rc = 0 ] || fail "srdma_xfer"
	[ "$(counter remote_access_errors)" -ge 4 ] || fail "access errors not counted"
}

# The data cases again with on-demand paging MRs on both sides
# (srdma_xfer -O), over memory never touched: every case's pages come in
# as srdma needs them. (The timer cases add nothing here but time.)
# xfer_data_cases [FLAG]: srdma_xfer's data and error cases (not the
# timer ones) on srdma0 in loopback, FLAG on both sides; its exit status.
xfer_data_cases() {
	local spid rc
	srdma_xfer -d srdma0 ${1:+"$1"} > /tmp/server.log 2>&1 &
	spid=$!
	sleep 1
	timeout 300 srdma_xfer -d srdma0 ${1:+"$1"} \
		-t write,read,send,write_imm,read_only_mr_read,local_protection,flush \
		127.0.0.1
	rc=$?
	kill $spid
	return $rc
}

test_rc_xfer_odp() {
	setup_bound_veth || fail "link add"
	xfer_data_cases -O || fail "srdma_xfer -O"
	[ "$(counter odp_misses)" -gt 0 ] || fail "no page missed"
	[ "$(counter odp_faults)" -gt 0 ] || fail "no page faulted in"
	echo "# odp_misses $(counter odp_misses), odp_faults $(counter odp_faults), rnr_nak_sent $(counter rnr_nak_sent)"
}

# The data cases with dma-buf MRs on both sides (srdma_xfer -D): udmabuf
# (6.12) or vgem buffers, registered with ibv_reg_dmabuf_mr(), checked
# through their mappings. Skipped without either (the debug kernel).
test_rc_xfer_dmabuf() {
	[ -e /dev/udmabuf ] || modprobe vgem 2>/dev/null || return 4
	setup_bound_veth || fail "link add"
	xfer_data_cases -D || { cat /tmp/server.log; fail "srdma_xfer -D"; }
}

perf_pair() {	# perf_pair TOOL ARGS...
	client_server "$* $PERF_ARGS" "$* $PERF_ARGS 127.0.0.1" 120 ||
		fail "$1"
	grep -qE '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/client.log ||
		fail "$1: no result line"
}

test_perftest_bw() {
	setup_bound_veth || fail "link add"
	perf_pair ib_send_bw -s 65536 -n 100 || return 1
	perf_pair ib_write_bw -s 65536 -n 100 || return 1
	perf_pair ib_read_bw -s 65536 -n 100 || return 1
}

# The READ responder's work runs where its QP's requester does: on the
# high-priority srdma_tx workqueue, on the QP's CPU (qp->tx_cpu), never on
# an unbound worker (a CPU-bound process on the responder shared the CPU
# with a nice-0 one, and a veth reorders packets sent from two CPUs).
# 50 READs of 1 MiB (srdma's requester asks for 16 responses at a time):
# every time the work is queued, on srdma_tx and one CPU, below nproc.
# hostile.sh's read_budget covers one READ request longer than a run's
# budget.
test_read_work_cpu() {
	local T=/sys/kernel/tracing ev n bad cpus
	setup_bound_veth || fail "link add"
	mountpoint -q $T || mount -t tracefs none $T || return 4
	ev=$T/events/workqueue/workqueue_queue_work
	[ -e "$ev/enable" ] || return 4
	trap 'echo 0 > $T/tracing_on' EXIT
	echo 0 > $T/tracing_on
	echo 4096 > $T/buffer_size_kb
	: > $T/trace
	# Enabled at boot in the test VM (scripts/vm/run): switching a
	# tracepoint patches kernel text (hostile.py's trace_queue_work).
	[ "$(cat "$ev/enable")" = 1 ] || echo 1 > "$ev/enable"
	echo 1 > $T/tracing_on
	perf_pair ib_read_bw -s 1048576 -n 50 || return 1
	echo 0 > $T/tracing_on
	grep 'function=srdma_read_work' $T/trace > /tmp/read_work.trace
	: > $T/trace
	n=$(wc -l < /tmp/read_work.trace)
	bad=$(grep -vc 'workqueue=srdma_tx ' /tmp/read_work.trace)
	cpus=$(grep -oE 'req_cpu=[0-9]+' /tmp/read_work.trace | sort -u |
		cut -d= -f2)
	echo "# read_work queued $n times, $bad not on srdma_tx, CPUs" $cpus
	[ "$n" -ge 50 ] || fail "read_work queued $n times for 50 READs of 1 MiB"
	[ "$bad" = 0 ] || fail "read_work on $(grep -v 'workqueue=srdma_tx ' \
		/tmp/read_work.trace | head -1)"
	[ "$(echo $cpus | wc -w)" = 1 ] && [ "$cpus" -lt "$(nproc)" ] ||
		fail "read_work queued for CPUs" $cpus
	[ "$(counter nak_sent)" = 0 ] && [ "$(counter rx_out_of_sequence)" = 0 ] ||
		fail "nak_sent $(counter nak_sent), rx_out_of_sequence $(counter rx_out_of_sequence)"
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
}

# Local delivery keeps each QP's packets in order and loses none, whichever
# CPU sends them: a 1 MiB message opens the window wider than one
# requester run's budget, so the rest leaves from send_work (any CPU)
# while ACKs run the requester in softirq. A lossless loopback run must
# draw no sequence NAK and see no PSN gap.
test_loop_in_order() {
	local c v
	setup_bound_veth || fail "link add"
	perf_pair ib_write_bw -s 1048576 -n 20 || return 1
	perf_pair ib_send_bw -s 1048576 -n 20 || return 1
	perf_pair ib_read_bw -s 1048576 -n 20 || return 1
	for c in rx_out_of_sequence nak_sent nak_received tx_errors; do
		v=$(counter $c)
		[ "$v" = 0 ] || fail "$c is $v on a lossless loopback"
	done
	[ "$(counter tx_packets)" -ge 15360 ] || fail "too few packets sent"
}

# Every packet head filled with 0xa5 when allocated (poison_heads), then
# srdma_xfer's data and error cases, with local delivery batches and
# without, and srdma_ud_test (payloads, the GRH area, every completion),
# all of which check every byte a receiver hands to a user: a byte some
# sender left unwritten would be 0xa5 there. (Without the fill, a page
# fragment head carries what an earlier packet left in it, which a test
# may well expect.) The module must say that it filled heads.
test_poisoned_heads() {
	local p=/sys/module/srdma/parameters
	setup_bound_veth || fail "link add"
	echo 165 > $p/poison_heads
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
	echo 0 > $p/loop_batch
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer, no batches"; }
	echo 16 > $p/loop_batch
	srdma_ud_test > /tmp/ud.log 2>&1 ||
		{ grep -E 'not ok|Expected' /tmp/ud.log; fail "srdma_ud_test"; }
	grep -E '^# (PASSED|FAILED|Totals)' /tmp/ud.log
	echo 0 > $p/poison_heads
	dmesg_new | grep -q 'packet heads filled with 0xa5' ||
		fail "no head was filled"
}

# The data path's copies (srdma_copy.c): memcpy() or a loop of 8-byte
# words, whichever was faster at load (under TCG the loop: memcpy() is
# "rep movsb", emulated a byte at a time). The parameter reads back the
# choice; each engine, forced at load, then carries srdma_xfer's data
# cases (sizes 1 B to 1 MiB at odd offsets, every byte checked) and
# srdma_ud_test (payloads and the GRH area), so the one real hardware
# would use is tested here too.
test_copy_engines() {
	local e v p=/sys/module/srdma/parameters/copy_engine
	modprobe srdma || fail "modprobe srdma"
	v=$(cat $p)
	[ "$v" = 0 ] || [ "$v" = 1 ] || fail "copy_engine reads '$v' after load"
	echo "# chosen at load: copy_engine $v"
	rmmod srdma || fail "rmmod srdma"
	veth_setup || fail "veth"
	for e in 0 1; do
		modprobe srdma copy_engine=$e &&
			rdma link add srdma0 type srdma netdev v0 || fail "link add"
		[ "$(cat $p)" = $e ] || fail "copy_engine=$e reads $(cat $p)"
		xfer_data_cases ||
			{ cat /tmp/server.log; fail "srdma_xfer, copy_engine=$e"; }
		srdma_ud_test > /tmp/ud.log 2>&1 ||
			{ grep -E 'not ok|Expected' /tmp/ud.log; fail "srdma_ud_test, copy_engine=$e"; }
		grep -E '^# (PASSED|FAILED|Totals)' /tmp/ud.log
		rdma link del srdma0 && rmmod srdma || fail "rmmod srdma"
	done
}

# A full local delivery queue (loop_qlen=16, against a window of up to
# hundreds of packets) drops packets on this host. The requester hears of
# each drop (-ENOBUFS) and sends the packet again soon; READ responses and
# ACKs dropped are recovered by the requester's timeout. Every transfer
# completes, the drops are counted, none ends in a retry error. Streams
# of WRITEs shorter than a packet and of 6000-byte SENDs, with batches
# and without (loop_batch=0), whose last packets are dropped too (a
# requester that then sent from the end of the message made an empty
# LAST: the QP failed, without batches at once), and srdma_xfer's data
# and error cases, every byte checked.
test_loop_queue_full() {
	local v
	modprobe srdma loop_qlen=16 && veth_setup &&
		rdma link add srdma0 type srdma netdev v0 || fail "link add"
	perf_pair ib_write_bw -s 1048576 -n 10 || return 1
	perf_pair ib_send_bw -s 1048576 -n 10 || return 1
	perf_pair ib_read_bw -s 1048576 -n 10 || return 1
	perf_pair ib_write_bw -s 100 -n 20000 || return 1
	perf_pair ib_send_bw -s 6000 -n 2000 || return 1
	echo 0 > /sys/module/srdma/parameters/loop_batch
	perf_pair ib_write_bw -s 100 -n 20000 || return 1
	perf_pair ib_send_bw -s 6000 -n 2000 || return 1
	echo 16 > /sys/module/srdma/parameters/loop_batch
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
	local r
	v=$(counter tx_errors)
	r=$(counter retransmits)
	echo "# tx_errors $v retransmits $r ack_timeouts $(counter ack_timeouts)"
	[ "$v" -gt 0 ] || fail "no local drop with a 16-packet queue (tx_errors $v)"
	[ "$r" -gt 0 ] || fail "drops but no retransmission"
	# This test's messages only (run.sh's mark): the hostile tests
	# before it run QPs out of retries on purpose.
	! dmesg_new | grep -q 'no ACK after .* retries' ||
		fail "a QP ran out of retries: $(dmesg_new | grep 'no ACK after')"
}

# Local delivery started on another CPU. By default (loop_spread=1) for
# a one-way stream: 5000 64-byte WRITEs must take fewer than 1.5 packets
# each, ACKs included. Delivered on the sender's CPU, every message is
# answered within its own doorbell and asks for its own ACK: exactly 2
# (10000 packets with loop_spread=0; 5390 measured with 1). Then always
# (loop_spread=2): srdma_xfer's data and error cases check every byte and
# completion, and 64-byte SEND and READ streams run. No sequence NAK and
# nothing out of sequence anywhere: RNR NAKs may come (the sender can
# outrun ib_send_bw's receives), but the receive credits of srdma's ACKs
# hold the SENDs behind one (it would discard them all); no local drop.
test_loop_spread() {
	local pk
	[ "$(nproc)" -ge 2 ] || return 4
	setup_bound_veth || fail "link add"
	[ "$(cat /sys/module/srdma/parameters/loop_spread)" = 1 ] ||
		fail "loop_spread is not 1 by default"
	perf_pair ib_write_bw -s 64 -n 5000 || return 1
	pk=$(counter tx_packets)
	echo "# one-way stream: $pk packets for 5000 WRITEs"
	[ "$pk" -ge 5000 ] || fail "too few packets sent ($pk)"
	[ "$pk" -lt 7500 ] ||
		fail "$pk packets for 5000 WRITEs: the stream stayed on the sender's CPU"
	echo 2 > /sys/module/srdma/parameters/loop_spread
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
	perf_pair ib_send_bw -s 64 -n 5000 || return 1
	perf_pair ib_read_bw -s 64 -n 5000 || return 1
	[ "$(counter tx_errors)" = 0 ] || fail "tx_errors $(counter tx_errors)"
	echo "# rnr_nak_sent $(counter rnr_nak_sent), tx_credit_waits $(counter tx_credit_waits)"
	[ "$(counter nak_sent)" = 0 ] && [ "$(counter rx_out_of_sequence)" = 0 ] ||
		fail "nak_sent $(counter nak_sent), rx_out_of_sequence $(counter rx_out_of_sequence), rnr_nak_sent $(counter rnr_nak_sent)"
}

# Local delivery batches (loop_batch, default 16): the packets a run
# sends back to back to a QP on this host go to the delivery queue
# together, each parsed and checked alone on receive. 200 WRITEs, SENDs
# and READs of 64 KiB (12800 data packets each) go in batches of 2 to 16
# packets on average, with nothing lost or out of sequence; srdma_xfer's
# data and error cases check every byte and completion.
# With loop_batch=0 no batch is made; srdma_xfer passes again.
test_loop_batches() {
	local b0 b pk op
	setup_bound_veth || fail "link add"
	[ "$(cat /sys/module/srdma/parameters/loop_batch)" = 16 ] ||
		fail "loop_batch is not 16 by default"
	for op in write send read; do
		b0=$(counter tx_local_batches)
		perf_pair ib_${op}_bw -s 65536 -n 200 || return 1
		b=$(($(counter tx_local_batches) - b0))
		echo "# ib_${op}_bw: 12800 data packets in $b batches"
		[ "$b" -ge 800 ] && [ "$b" -le 6400 ] ||
			fail "ib_${op}_bw: $b batches for 12800 packets"
	done
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
	pk=$(counter tx_packets)
	[ "$pk" = "$(counter rx_packets)" ] ||
		fail "tx_packets $pk, rx_packets $(counter rx_packets)"
	# A stalled vCPU may draw a tail-loss probe: a duplicate, no more.
	echo "# rx_duplicates $(counter rx_duplicates) tail_loss_probes $(counter tail_loss_probes) early_timeouts $(counter early_timeouts)"
	for c in tx_errors nak_sent rx_out_of_sequence; do
		[ "$(counter $c)" = 0 ] || fail "$c $(counter $c)"
	done
	echo 0 > /sys/module/srdma/parameters/loop_batch
	b0=$(counter tx_local_batches)
	perf_pair ib_write_bw -s 65536 -n 50 || return 1
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer, no batches"; }
	[ "$(counter tx_local_batches)" = "$b0" ] ||
		fail "batches with loop_batch=0: $b0 -> $(counter tx_local_batches)"
}

# Direct local placement (srdma_recv.c, loop_direct, default on): a
# 2-byte ping-pong between two QPs of the device places nearly every
# WRITE and SEND without a packet and completes it in the doorbell
# (tx_direct counts them; each still counts as a packet sent and
# received, and no ACK goes out for it). srdma_xfer's data and error
# cases (every byte and completion field) pass with it; nothing is lost,
# resent or out of sequence. With loop_direct=0 nothing is placed so, and
# srdma_xfer passes again. The latencies with and without are logged.
# Last, with a ping-pong running, v0 goes down: nothing is placed after.
test_loop_direct() {
	local p=/sys/module/srdma/parameters/loop_direct d0 d tx op lat
	setup_bound_veth || fail "link add"
	[ "$(cat $p)" = 1 ] || fail "loop_direct is not 1 by default"
	for op in write send; do
		d0=$(counter tx_direct)
		perf_pair ib_${op}_lat -s 2 -n 2000 || return 1
		d=$(($(counter tx_direct) - d0))
		lat=$(awk '$1 == 2 && NF >= 6 { print $5 }' /tmp/client.log | tail -1)
		echo "# ib_${op}_lat: $d of 4000 messages placed directly, typical $lat us"
		[ "$d" -ge 2000 ] || fail "ib_${op}_lat: only $d of 4000 placed directly"
	done
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer"; }
	tx=$(counter tx_packets)
	[ "$tx" = "$(counter rx_packets)" ] ||
		fail "tx_packets $tx, rx_packets $(counter rx_packets)"
	local probes
	# An answer can come after the tail-loss probe or early timeout
	# meant for a lost one (each resends one packet) when a vCPU is held
	# off for a while (host noise, and the debug kernel): allowed only if
	# nothing was lost, every resent packet a duplicate at the responder.
	probes=$(($(counter tail_loss_probes) + $(counter early_timeouts)))
	[ "$(counter retransmits)" = $probes ] &&
	[ "$(counter rx_duplicates)" = $probes ] ||
		fail "resent packets not all probes and duplicates: $(rdma statistic show link srdma0/1)"
	[ $probes = 0 ] || echo "# $probes probes answered late (duplicates)"
	for c in tx_errors nak_sent rx_out_of_sequence ack_timeouts; do
		[ "$(counter $c)" = 0 ] ||
			fail "$c $(counter $c): $(rdma statistic show link srdma0/1)"
	done
	echo 0 > $p
	d0=$(counter tx_direct)
	perf_pair ib_write_lat -s 2 -n 2000 || return 1
	lat=$(awk '$1 == 2 && NF >= 6 { print $5 }' /tmp/client.log | tail -1)
	echo "# loop_direct=0: ib_write_lat typical $lat us"
	xfer_data_cases || { cat /tmp/server.log; fail "srdma_xfer, loop_direct=0"; }
	[ "$(counter tx_direct)" = "$d0" ] ||
		fail "placed directly with loop_direct=0: $d0 -> $(counter tx_direct)"
	echo 1 > $p
	# The route is looked up for each placement as for each packet:
	# once v0 is down, nothing is placed. (perftest, polling memory for
	# the peer's WRITE, does not end by itself: it is stopped.)
	ib_write_lat -s 2 -n 100000000 $PERF_ARGS > /tmp/server.log 2>&1 &
	local spid=$! cpid i
	sleep 1
	ib_write_lat -s 2 -n 100000000 $PERF_ARGS 127.0.0.1 > /tmp/client.log 2>&1 &
	cpid=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(counter tx_direct)" -gt "$((d0 + 1000))" ] && break
		sleep 0.1
	done
	ip link set v0 down
	d=$(counter tx_direct)
	sleep 3
	kill $cpid $spid 2> /dev/null
	wait $cpid $spid
	[ "$(counter tx_direct)" = "$d" ] ||
		fail "placed after v0 went down: $d -> $(counter tx_direct)"
	echo "# v0 down: $((d - d0)) placed before, none in 3 s after (tx_errors $(counter tx_errors), retransmits $(counter retransmits))"
	ip link set v0 up
}

test_perftest_lat() {
	setup_bound_veth || fail "link add"
	perf_pair ib_send_lat -s 2 -n 100 || return 1
	perf_pair ib_write_lat -s 2 -n 100 || return 1
	perf_pair ib_read_lat -s 2 -n 100 || return 1
}

# A process killed with QPs, MRs and traffic in flight leaves nothing
# behind: the module unloads.
test_kill_mid_transfer() {
	setup_bound_veth || fail "link add"
	ib_write_bw -d srdma0 -x 1 -F -s 65536 -n 100000 > /dev/null 2>&1 &
	s=$!
	sleep 1
	ib_write_bw -d srdma0 -x 1 -F -s 65536 -n 100000 127.0.0.1 > /dev/null 2>&1 &
	c=$!
	sleep 3
	kill -9 $c $s
	wait $c $s 2>/dev/null
	rdma link delete srdma0 || fail "link delete"
	rmmod srdma || fail "rmmod after kill"
}

# The data path over IPv6 (RoCEv2 GID of 2001:db8::1).
test_rc_ipv6() {
	setup_bound_veth || fail "link add"
	ip addr add 2001:db8::1/64 dev v0 nodad || fail "ipv6 address"
	g=$(roce2_gid_of srdma0 2001:0db8:0000:0000:0000:0000:0000:0001) ||
		fail "no GID for 2001:db8::1"
	client_server "ibv_rc_pingpong -d srdma0 -g $g -n 20" \
		"ibv_rc_pingpong -d srdma0 -g $g -n 20 127.0.0.1" ||
		fail "ibv_rc_pingpong over IPv6"
	grep -q 'GID 2001:db8::1' /tmp/client.log || fail "not the IPv6 GID"
	srdma_xfer -d srdma0 -g "$g" > /tmp/server.log 2>&1 &
	spid=$!
	sleep 1
	timeout 300 srdma_xfer -d srdma0 -g "$g" -t write,read,send,write_imm,bad_rkey_write 127.0.0.1
	rc=$?
	kill $spid
	[ $rc = 0 ] || fail "srdma_xfer over IPv6"
	[ "$(counter rx_bad_icrc)" = 0 ] || fail "ICRC errors over IPv6"
}

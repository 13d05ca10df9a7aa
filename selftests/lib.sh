#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shell helpers for the srdma selftests (sourced inside the test VM).

# On the debug kernel (KASAN, lockdep, ... under emulation) every packet
# costs several times more: the data-path tests stretch their ACK timeouts
# and completion waits (see srdma_xfer.c, srdma_stress.c).
case $(uname -r) in
*-srdma-debug) export SRDMA_TEST_SLOW=${SRDMA_TEST_SLOW:-2} ;;
esac

: "${SRDMA_ROOT:?SRDMA_ROOT must point at the source tree}"
B=$SRDMA_ROOT/build
# The module under test and its module indexes (scripts/mkmodroot); a
# build for a second kernel lives elsewhere (scripts/second-kernel-build).
KO=${SRDMA_KO:-$SRDMA_ROOT/drivers/infiniband/sw/srdma/srdma.ko}
MODROOT=${SRDMA_MODROOT:-$B/modroot}
export RDMAV_DRIVERS=$B/provider/libsrdma
export PATH=$B/selftests:$PATH

# The kernel log from the first test script of this boot on: the line
# SRDMA_LOG_MARK goes into it when a script first sources this file,
# before anything loads srdma. A check of the whole log (test_log |
# dmesg_bad) leaves out the kernel's own boot, where no test code has run
# yet (the debug kernel once drew a KASAN report there, from an interrupt
# taken in identify_cpu() at 3 s); boot_reports shows what it left out,
# as notes. Should the mark have left the log's ring, the whole log is
# checked.
SRDMA_LOG_MARK="srdma selftests: log mark"
if [ -w /dev/kmsg ] && ! dmesg | grep -qF "$SRDMA_LOG_MARK"; then
	echo "$SRDMA_LOG_MARK" > /dev/kmsg
fi
test_log() {
	dmesg | awk -v m="$SRDMA_LOG_MARK" '
		f { print; next }
		index($0, m) { f = 1; next }
		{ pre[++n] = $0 }
		END { if (!f) for (i = 1; i <= n; i++) print pre[i] }'
}
boot_reports() {
	dmesg | awk -v m="$SRDMA_LOG_MARK" 'index($0, m) { exit } { print }' |
		dmesg_bad | head -3 |
		sed 's/^/# kernel report at boot, before any test ran: /'
}

# Kernel log lines that fail any test.
DMESG_BAD='WARNING:|BUG:|Oops|general protection|KASAN|UBSAN|possible circular locking|possible recursive locking|INFO: task .* blocked|Call Trace|unreferenced object|refcount_t:|list_add corruption|list_del corruption|ib_query_port failed'

# Kernel reports that are not srdma's and that no test can avoid, each
# recognised by every one of its patterns inside one report (from its
# "WARNING:" line to the end of its call trace), with the reason.
#  - nvmet on 6.1: removing a port's subsystem link holds nvmet_config_sem
#    while it destroys the listening cm_id (its handler_mutex); a connect
#    command handled from the CM's ESTABLISHED event took them the other
#    way. No srdma frame; any RDMA device draws it (blktests' nvme group
#    reports it for rdma_rxe and TCP too).
DMESG_KNOWN=(
	"possible circular locking.*nvmet_config_sem.*handler_mutex|possible circular locking.*handler_mutex.*nvmet_config_sem"
)

# perftest's connect race (perftest 4.5-0.17, Debian 12's; fixed upstream
# by "perftest: Fix crashes and logical flaws in RDMA CM connection
# retry", December 2025): with -R the server creates its rdma_cm listener
# only after its TCP handshake with the client, and the client sends its
# CM REQ right after that handshake. A REQ that arrives first is rejected
# (no listener: the CM's answer, on any device), and the client's retry
# then reuses the cm_ids it has just destroyed: it crashes in librdmacm,
# and its server waits for a connection that never comes. Seen on the slow
# CI machine across two guests, and once here in cm.sh's one guest, with
# the kernel log's "traps: ib_... general protection fault ... in
# librdmacm"; one run lost it three times in a row, 2.5 s apart. So the
# -R clients run with srdma_cm_delay.so preloaded (selftests/preload,
# $PERFTEST_CM_DELAY): their rdma_resolve_addr() waits 500 ms, time for
# the server to listen. Should one lose all the same, the pair runs it
# again. perftest_cm_race NAME STATUS: did the run of NAME (a name ending
# in _R) that ended with STATUS lose that race? If so it says so and
# notes the run in $PERFTEST_RACES; dmesg_bad then passes the crash's
# line (PERFTEST_RACE_TRAP), and only that.
PERFTEST_RACES=/tmp/perftest_cm_races
PERFTEST_RACE_TRAP='traps: ib_[a-z_]+\[[0-9]+\] general protection fault .* in librdmacm'
PERFTEST_CM_DELAY=$B/selftests/srdma_cm_delay.so
perftest_cm_race() {
	case $1 in *_R) ;; *) return 1 ;; esac
	grep -q 'RDMA_CM_EVENT_REJECTED' /tmp/client.log ||
		{ [ "$2" -gt 128 ] && [ "$2" != 137 ]; } || return 1
	echo "# $1: lost perftest's connect race (exit status $2), run again"
	echo "$1 $2" >> $PERFTEST_RACES
}

# dmesg_bad [known]: the lines of the kernel log on stdin that fail a test
# (those DMESG_BAD matches, outside the known reports of DMESG_KNOWN and
# the crashes of a perftest race run again, perftest_cm_race); with
# "known", the first line of each known report instead.
dmesg_bad() {
	local known race=
	known=$(IFS='|'; echo "${DMESG_KNOWN[*]}")
	[ ! -s $PERFTEST_RACES ] || race=$PERFTEST_RACE_TRAP
	# The race's pattern from the environment: -v would take its \[.
	RACE=$race awk -v bad="$DMESG_BAD" -v known="$known" \
		-v want="${1:-bad}" '
		function flush() {
			if (blk == "")
				return
			if (known != "" && blk ~ known) {
				if (want == "known")
					print first
			} else if (want == "bad") {
				printf "%s", bad_lines
			}
			blk = ""; bad_lines = ""
		}
		ENVIRON["RACE"] != "" && $0 ~ ENVIRON["RACE"] { next }
		/WARNING:|BUG:/ { flush(); blk = " "; first = $0 }
		{
			if (blk != "") {
				blk = blk " " $0
				if ($0 ~ bad)
					bad_lines = bad_lines $0 "\n"
				if ($0 ~ /<\/TASK>|---\[ end trace/)
					flush()
			} else if ($0 ~ bad && want == "bad") {
				print
			}
		}
		END { flush() }'
}

# Fail the test: each test runs in its own subshell, so this ends it.
fail() { echo "FAIL: $*"; exit 1; }

# Copy the module into the guest's (writable, throwaway) module tree so
# that modprobe and `rdma link add ... type srdma` autoloading find it.
srdma_install_module() {
	local d=/lib/modules/$(uname -r) m=$MODROOT/lib/modules/$(uname -r)
	[ -f "$m/extra/srdma.ko" ] || { echo "no $m (run make)"; return 1; }
	cmp -s "$m/extra/srdma.ko" "$KO" || { echo "$m is stale (run make)"; return 1; }
	mkdir -p "$d/extra" && cp "$m"/modules.* "$d/" && cp "$KO" "$d/extra/"
}

# expect_err ERRTEXT CMD...: CMD must fail and print ERRTEXT.
expect_err() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "'$*' succeeded, expected '$want'"
		return 1
	fi
	grep -q -- "$want" <<< "$out" ||
		{ fail "'$*' said '$out', expected '$want'"; return 1; }
}

# wait_for SECS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
	local n=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

# ktest_module NAME: load the test module selftests/kmod/NAME.ko on srdma0
# bound to a veth (tests/link.sh's setup_bound_veth). It runs its checks
# as it loads and loads only if all passed; its log lines are printed,
# then "# PASS: N checks". Fails the test if it did not load, logged no
# PASS line or does not unload.
ktest_module() {
	local name=$1 ko=$SRDMA_ROOT/selftests/kmod/$1.ko mark out rc
	[ -f "$ko" ] || fail "no $ko (run make)"
	setup_bound_veth || fail "link add"
	roce2_ipv4_gid srdma0 > /dev/null || fail "no IPv4 GID"
	mark=$(dmesg | wc -l)
	insmod "$ko" dev=srdma0
	rc=$?
	out=$(dmesg | tail -n +$((mark + 1)) | grep "$name")
	echo "$out"
	[ $rc = 0 ] || fail "the module's checks failed"
	grep -q "$name: PASS: [0-9]* checks" <<< "$out" ||
		fail "no PASS line"
	echo "# $(grep -o 'PASS: [0-9]* checks' <<< "$out")"
	rmmod "$name" || fail "rmmod $name"
}

dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
dev_absent() { [ ! -e "/sys/class/infiniband/$1" ]; }

# v0's MAC. Its third byte is 0xff, so the default GID built from it,
# fe80::5e:ffff:fe00:1, has 0xff in bytes 10 and 11 as an IPv4-mapped GID
# does: a test that tells the two apart by those bytes alone fails every
# time, not once in 256 random MACs (stress_lifetimes in CI, 2026-12).
V0_MAC=02:5e:ff:00:00:01

# True if netdev $1's carrier is up (read without starting a process).
carrier_up() {
	local c
	read -r c < "/sys/class/net/$1/carrier" 2>/dev/null && [ "$c" = 1 ]
}

# A veth pair v0/v1 with 10.0.0.1/24 on v0, both up. The ip commands go
# in one batch: each process takes about 0.2 s to start in the test VM.
veth_setup() {
	ip -b - <<-EOF || return 1
		link add v0 address $V0_MAC type veth peer name v1
		addr add 10.0.0.1/24 dev v0
		link set v0 up
		link set v1 up
	EOF
	wait_for 5 carrier_up v0
}

# A veth pair across namespaces: v0 (10.0.0.1/24) here, v1 (10.0.0.2/24)
# in netns ns1 with lo up there; both up.
veth_netns_pair() {
	ip netns add ns1 || return 1
	ip -b - <<-EOF || return 1
		link add v0 address $V0_MAC type veth peer name v1 netns ns1
		addr add 10.0.0.1/24 dev v0
		link set v0 up
	EOF
	ip -n ns1 -b - <<-EOF
		addr add 10.0.0.2/24 dev v1
		link set v1 up
		link set lo up
	EOF
}

# Remove whatever a test left behind, and unload srdma. It runs after
# every test: each command is only started for something that is there
# (a process takes about 0.2 s to start in the test VM).
env_reset() {
	local d ns
	for d in /sys/class/infiniband/srdma*; do
		[ -e "$d" ] && rdma link delete "${d##*/}" 2>/dev/null
	done
	for ns in /run/netns/*; do
		[ -e "$ns" ] || continue
		for d in $(ip netns exec "${ns##*/}" ls /sys/class/infiniband 2>/dev/null); do
			ip netns exec "${ns##*/}" rdma link delete "$d" 2>/dev/null
		done
	done
	[ ! -e /sys/class/net/v0 ] || ip link del v0 2>/dev/null
	[ ! -e /sys/class/net/v2 ] || ip link del v2 2>/dev/null
	[ ! -e /sys/class/net/t0 ] || ip tuntap del t0 mode tun 2>/dev/null
	for ns in /run/netns/*; do
		[ -e "$ns" ] && ip netns del "${ns##*/}"
	done
	[ ! -e /sys/module/rdma_rxe ] || modprobe -r rdma_rxe 2>/dev/null
	if [ -e /sys/module/srdma ]; then
		rmmod srdma || echo "env_reset: rmmod srdma failed"
	fi
}

# How many TCP and rdma_cm listeners this namespace has.
listeners() {
	echo $(($(ss -Hltn | wc -l) +
		$(rdma resource show cm_id 2>/dev/null | grep -c LISTEN)))
}

# Run a server command in the background and its client against it; both
# must exit 0. usage: client_server "SERVER CMD" "CLIENT CMD" [TIMEOUT]
client_server() {
	local srv=$1 cli=$2 t=${3:-120} spid rc=0 before i
	before=$(listeners)
	timeout "$t" bash -c "$srv" > /tmp/server.log 2>&1 &
	spid=$!
	# The stock tools connect once: start the client when the server
	# listens (a new TCP or rdma_cm listener), not after a guess at how
	# long the server takes to create its resources.
	for ((i = 0; i < 300; i++)); do
		[ "$(listeners)" -gt "$before" ] && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	timeout "$t" bash -c "$cli" > /tmp/client.log 2>&1 || rc=$?
	# A server whose client failed may wait for it to its own timeout
	# (perftest's, after its client lost the connect race of
	# perftest_cm_race): it is stopped after 30 s.
	for ((i = 0; rc != 0 && i < 300; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	[ $rc = 0 ] || kill "$spid" 2>/dev/null
	wait "$spid" || { echo "server failed:"; cat /tmp/server.log; rc=1; }
	cat /tmp/client.log
	return $rc
}

# counter_in NAME: NAME's value in the rdma statistic output on stdin.
counter_in() {
	grep -oE "(^| )$1 [0-9]+" | awk '{print $2}'
}

# The value of one hw counter of srdma0 port 1.
counter() {
	rdma statistic show link "${2:-srdma0}/1" | counter_in "$1"
}

# ns_counter NS NAME [DEV]: counter() of a device whose netdev is in NS.
ns_counter() {
	ip netns exec "$1" rdma statistic show link "${3:-srdma0}/1" |
		counter_in "$2"
}

# counter_list DEV NS NAME...: "NAME value" for each NAME of DEV's port 1,
# DEV's netdev in netns NS (empty: this one).
counter_list() {
	local dev=$1 ns=$2 n out
	shift 2
	out=$(${ns:+ip netns exec "$ns"} rdma statistic show link "$dev/1")
	for n in "$@"; do
		echo -n "$n $(counter_in "$n" <<< "$out") "
	done
}

# Packets dropped so far for want of room in a CPU's receive backlog
# (the second column of /proc/net/softnet_stat, hex, one line per CPU).
softnet_drops() {
	local d sum=0
	for d in $(awk '{print $2}' /proc/net/softnet_stat); do
		sum=$((sum + 16#$d))
	done
	echo $sum
}

# Index of DEV's RoCEv2 GID for an IPv4 address, waiting up to 10 s.
roce2_ipv4_gid() {
	roce2_gid_of "$1" '0000:0000:0000:0000:0000:ffff:*'
}

# Index of DEV's RoCEv2 GID matching the glob PATTERN (sysfs form, such as
# 2001:0db8:0000:...:0001), waiting up to 10 s.
roce2_gid_of() {
	local dev=$1 want=$2 i g idx gid type
	for ((i = 0; i < 100; i++)); do
		for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
			idx=${g##*/}
			read -r gid < "$g" 2>/dev/null || continue
			# shellcheck disable=SC2053
			[[ $gid == $want ]] || continue
			read -r type < /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$idx" 2>/dev/null &&
				[ "$type" = "RoCE v2" ] && { echo "$idx"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

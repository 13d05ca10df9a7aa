#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# srdma selftest runner, run inside the test VM (scripts/run-tests boots
# it). Prints KTAP: one "ok"/"not ok" line per test, then a summary.
# A test fails if it fails its assertions or if the kernel log gains a WARN,
# BUG, oops or similar splat while it runs.
#
# usage: run.sh [PATTERN]   run only tests whose name matches PATTERN
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
pattern=${1:-.}

# One-guest versions of scenarios that make check runs across two guests
# (scripts/run-tests): left out of the whole suite (PATTERN .) for make
# check's time, run when named or all together with PATTERN "more" (make
# check-more).
MORE=(storage_nvme_rdma storage_nfs_rdma mpi_ucx ucx_loss ucx_perftest_ud
      ucx_perftest_uct atomic_perftest atomic_perftest_rxe)
if [ "$pattern" = more ]; then
	pattern="^($(IFS='|'; echo "${MORE[*]}"))\$"
elif [ "$pattern" = . ]; then
	skip_more=1
fi

n=0 pass=0 failed=0 skipped=0

report() {	# report STATUS NAME [OUTPUT]
	n=$((n + 1))
	case $1 in
	pass) pass=$((pass + 1)); echo "ok $n $2" ;;
	skip) skipped=$((skipped + 1)); echo "ok $n $2 # SKIP" ;;
	*) failed=$((failed + 1)); echo "not ok $n $2" ;;
	esac
	if [ "$1" != pass ] && [ -n "${3:-}" ]; then
		sed 's/^/# /' <<< "$3"
	fi
}

# took NAME T0: say how long a test ran, if 10 s or more, so that a slow
# suite shows where its time goes (make check is kept under 45 minutes).
took() {
	local s=$((SECONDS - $2))
	[ $s -lt 10 ] || echo "# time $1: $s s"
}

dmesg_new() { dmesg | tail -n +$((mark + 1)); }

# dmesg_since_mark: the kernel log lines since line $mark in $new, what
# of them is bad (dmesg_bad) in $bad, known reports printed as notes; then
# $mark moves past them, for the next test. The awk filters only run on a
# log that has something to find: a process takes about 0.2 s to start in
# the test VM, and this runs after every test.
dmesg_since_mark() {
	local all lines IFS=$'\n'
	all=$(dmesg)
	mapfile -t -s "$mark" lines <<< "$all"
	new="${lines[*]}"
	mark=$((mark + ${#lines[@]}))
	bad=
	[[ $new =~ $DMESG_BAD ]] || return 0
	bad=$(dmesg_bad <<< "$new")
	dmesg_bad known <<< "$new" | sed 's/^/# known kernel report, not srdma: /'
}

# run_shell NAME: run the shell function test_NAME in a subshell.
run_shell() {
	local name=$1 out rc bad new t0=$SECONDS
	[[ $name =~ $pattern ]] || return 0
	[[ -z ${skip_more:-} || " ${MORE[*]} " != *" $name "* ]] || return 0
	out=$( (set -u; "test_$name") 2>&1 )
	rc=$?
	took "$name" "$t0"
	env_reset >/dev/null 2>&1
	dmesg_since_mark
	if [ $rc = 4 ]; then
		report skip "$name" "$out"
	elif [ $rc != 0 ]; then
		report fail "$name" "$out"
	elif [ -n "$bad" ]; then
		report fail "$name" "$out
dmesg: $bad"
	else
		report pass "$name"
		# What a passing test measured: its lines that start with "# ".
		grep '^# ' <<< "$out"
	fi
}

# run_harness BIN SETUP: run a kselftest_harness binary after the shell
# function SETUP, and count each of its test cases as one test.
run_harness() {
	local bin=$1 setup=$2 out rc bad new line name status t0=$SECONDS
	[[ $bin =~ $pattern ]] || return 0
	out=$("$setup" 2>&1) || {
		report fail "$bin.setup" "$out"
		env_reset
		dmesg_since_mark
		return
	}
	out=$("$B/selftests/$bin" 2>&1)
	rc=$?
	took "$bin" "$t0"
	env_reset >/dev/null 2>&1
	dmesg_since_mark
	local cases=0
	local run=
	while read -r line; do
		case $line in
		"#  RUN "*)	# the harness names a skipped case only here
			run=$(awk '{ print $3 }' <<< "$line"); continue ;;
		"ok "*"# SKIP"*) status=skip ;;
		"ok "*) status=pass ;;
		"not ok "*) status=fail ;;
		*) continue ;;
		esac
		name=$(sed -E 's/^(not )?ok [0-9]+ //; s/ # .*//' <<< "$line")
		[ -z "$name" ] || [ "${name:0:1}" = "#" ] && name=$run
		[ -n "$bad" ] && [ "$status" = pass ] && status=fail
		cases=$((cases + 1))
		if [ "$status" = fail ]; then
			# The case's lines, and its assertions, which name
			# it without the fixture ("file:line:case:...").
			report fail "$bin.$name" "$(grep -F -e "$name" \
				-e ":${name#*.}:" <<< "$out")
$bad"
		else
			report "$status" "$bin.$name"
		fi
	done < <(grep -E '^((not )?ok [0-9]+ |#  RUN )' <<< "$out")
	if [ $cases = 0 ] || { [ $rc != 0 ] && [ $failed = 0 ]; }; then
		report fail "$bin" "$out"
	fi
}

# dma-buf MRs take their buffers from vgem (srdma_dmabuf_test skips
# without it: the debug kernel has none).
setup_vgem_veth() {
	modprobe vgem 2>/dev/null
	setup_bound_veth
}

echo "KTAP version 1"
srdma_install_module || { echo "not ok 1 install-module"; exit 1; }
modprobe ib_uverbs
mark=$(dmesg | wc -l)

for f in "$here"/tests/*.sh; do
	# shellcheck disable=SC1090
	. "$f"
done
# Tests that draw a known kernel report (DMESG_KNOWN) run last: lockdep
# switches itself off after its first report, and the others run with it.
RUN_LAST=(storage_nvme_rdma)
for t in $(declare -F | awk '$3 ~ /^test_/ { sub(/^test_/, "", $3); print $3 }'); do
	[[ " ${RUN_LAST[*]} " == *" $t "* ]] || run_shell "$t"
done

run_harness srdma_verbs_test setup_bound_veth
run_harness srdma_ring_test setup_bound_veth
run_harness srdma_ud_test setup_bound_veth
run_harness srdma_cqex_test setup_bound_veth
run_harness srdma_inline_test setup_bound_veth
run_harness srdma_atomic_test setup_bound_veth
run_harness srdma_mw_test setup_bound_veth
run_harness srdma_odp_test setup_bound_veth
run_harness srdma_dm_test setup_bound_veth
run_harness srdma_dmabuf_test setup_vgem_veth
run_harness srdma_xrc_test setup_bound_veth

run_harness srdma_srq_test setup_bound_veth
run_harness srdma_resize_test setup_bound_veth

for t in "${RUN_LAST[@]}"; do
	declare -F "test_$t" > /dev/null && run_shell "$t"
done

# On a kernel with kmemleak (make check-debug): no leak from srdma or the
# RDMA core. Leaks reported with no such frame belong to someone else.
kleak=/sys/kernel/debug/kmemleak
if [ -w $kleak ]; then
	env_reset >/dev/null 2>&1
	echo scan > $kleak; sleep 5; echo scan > $kleak
	leaks=$(awk 'BEGIN { RS = "unreferenced object" }
		     /srdma|ib_|rdma|uverbs/ { print "unreferenced object" $0 }' $kleak)
	if [ -z "$leaks" ]; then
		report pass kmemleak
	else
		report fail kmemleak "$leaks"
	fi
fi

# After everything: the module unloads and the whole log is clean.
final_out=$(env_reset 2>&1; lsmod | grep '^srdma ' && echo "srdma still loaded";
	    test_log | dmesg_bad)
boot_reports
if [ -z "$final_out" ]; then
	report pass final_unload_and_dmesg
else
	report fail final_unload_and_dmesg "$final_out"
fi

echo "# srdma selftests: $pass passed, $failed failed, $skipped skipped"
[ $failed = 0 ]

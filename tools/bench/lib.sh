# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shell helpers of the bench's guest scripts (bench-guest, loss-peer,
# lat-peer). Sourced, not run.

# better NEW BEST lt|gt: NEW if it is a value and BEST is none yet or NEW
# is lower (lt) or higher (gt) than it, else BEST.
better() {
	if [ -n "$1" ] && { [ -z "$2" ] ||
	   awk -v a="$1" -v b="$2" -v o="$3" 'BEGIN { exit !(o == "lt" ? a < b : a > b) }'; }; then
		echo "$1"
	else
		echo "$2"
	fi
}

# peer_client SECS TOOL ARGS...: the output of a perftest client run
# against the peer guest (SRDMA_PEER_IP), each try limited to SECS; the
# server may still be binding its device, so a refused connection is
# tried again, up to 50 times.
peer_client() {
	local secs=$1 out i
	shift
	for i in $(seq 50); do
		out=$(timeout "$secs" "$@" "$SRDMA_PEER_IP" 2>&1) && break
		grep -q "Couldn't connect\|Unable to init\|Failed to connect" <<< "$out" || break
		sleep 0.5
	done
	printf '%s\n' "$out"
}

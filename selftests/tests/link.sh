#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Module load/unload and `rdma link` life cycle tests (sourced by run.sh).
# Each test_* runs in a subshell; non-zero fails it, 4 skips it.

setup_bound_veth() {
	modprobe srdma && veth_setup && rdma link add srdma0 type srdma netdev v0
}

test_module_load_unload() {
	local mark
	mark=$(dmesg | wc -l)
	modprobe srdma || fail "modprobe srdma"
	lsmod | grep -q '^srdma ' || fail "srdma not in lsmod"
	# A load that binds nothing has nothing to say above debug level.
	! dmesg | tail -n +$((mark + 1)) | grep -q 'srdma' ||
		fail "load logged: $(dmesg | tail -n +$((mark + 1)) | grep srdma)"
	rmmod srdma || fail "rmmod srdma"
	! lsmod | grep -q '^srdma ' || fail "srdma still loaded"
	# Twice, to catch anything the first unload leaked.
	modprobe srdma && rmmod srdma || fail "second load/unload"
}

test_link_autoload() {
	veth_setup || fail "veth"
	! lsmod | grep -q '^srdma ' || fail "srdma loaded too early"
	rdma link add srdma0 type srdma netdev v0 || fail "link add"
	lsmod | grep -q '^srdma ' || fail "rdma link add did not load srdma"
}

test_link_add_delete() {
	setup_bound_veth || fail "link add"
	dev_exists srdma0 || fail "no srdma0 in sysfs"
	rdma link show srdma0/1 | grep -q 'state ACTIVE.*netdev v0' ||
		fail "rdma link show: $(rdma link show)"
	ls /sys/class/infiniband/srdma0/device 2>/dev/null
	ls /sys/class/infiniband_verbs/ | grep -q uverbs || fail "no uverbs device"
	[ -n "$(ls /dev/infiniband/uverbs* 2>/dev/null)" ] || fail "no /dev/infiniband/uverbs*"
	rdma link delete srdma0 || fail "link delete"
	wait_for 5 dev_absent srdma0 || fail "srdma0 still present after delete"
	# And again on the same netdev.
	rdma link add srdma0 type srdma netdev v0 || fail "re-add"
	rdma link delete srdma0 || fail "second delete"
	wait_for 5 dev_absent srdma0 || fail "srdma0 present after second delete"
	dmesg | grep -q 'srdma0: bound to v0' || fail "no bind message"
}

test_link_double_add() {
	setup_bound_veth || fail "link add"
	expect_err "File exists" rdma link add srdma1 type srdma netdev v0 || return 1
	dmesg | tail -3 | grep -q 'srdma1: v0 already has an srdma device' ||
		fail "no message for double add"
	dev_absent srdma1 || fail "srdma1 was created"
	# The same name on another netdev is refused by the core.
	ip link add v2 type veth peer name v3
	if rdma link add srdma0 type srdma netdev v2 2>/dev/null; then
		fail "duplicate device name accepted"
	fi
	dev_exists srdma0 || fail "srdma0 lost"
	# Two devices on two netdevs share the namespace's socket.
	rdma link add srdma2 type srdma netdev v2 || fail "second device"
	rdma link delete srdma2 || fail "delete second device"
	dev_exists srdma0 || fail "srdma0 lost after deleting srdma2"
}

test_link_bad_netdev() {
	modprobe srdma || fail "modprobe"
	expect_err "No such device" rdma link add srdma0 type srdma netdev nosuch || return 1
	expect_err "Invalid argument" rdma link add srdma0 type srdma netdev lo || return 1
	dmesg | tail -3 | grep -q 'lo is not an Ethernet device' || fail "no message for lo"
	modprobe tun
	ip tuntap add t0 mode tun || fail "tun"
	expect_err "Invalid argument" rdma link add srdma0 type srdma netdev t0 || return 1
	dev_absent srdma0 || fail "device created on a bad netdev"
}

test_netdev_removal() {
	setup_bound_veth || fail "link add"
	ip link del v0 || fail "ip link del"
	wait_for 5 dev_absent srdma0 || fail "srdma0 survived its netdev"
	dmesg | tail -5 | grep -q 'v0 is going away' || fail "no removal message"
	rmmod srdma || fail "rmmod after netdev removal"
}

# released DEV: wait (5 s at most) for DEV's release to log that it has
# left srdma's list and sleeps (dealloc_delay_ms), as this test's log
# shows it for the nth time (the count of earlier ones in $released_seen).
released() {
	local i n
	for ((i = 0; i < 50; i++)); do
		n=$(dmesg_new | grep -c "$1: released, sleeping")
		if [ "$n" -gt "$released_seen" ]; then
			released_seen=$n
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# rmmod_waits WHAT: rmmod srdma during WHAT's release, which sleeps 1 s
# (dealloc_delay_ms): it must wait for it, at least 0.4 s.
rmmod_waits() {
	local t0 t1 ms
	t0=$(date +%s%N)
	rmmod srdma || fail "rmmod during the release"
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	echo "# rmmod during $1's release took $ms ms"
	[ $ms -ge 400 ] || fail "rmmod did not wait for the release"
}

# Module unload while a device's release is still under way: the netdev
# is deleted (the notifier queues the device's unregistration), the
# release sleeps 1 s at its very end, after the device has left srdma's
# list (dealloc_delay_ms), and rmmod comes once it has logged so. It must
# wait for that release to end before the module goes (at least 0.4 s),
# and everything must end cleanly (run.sh checks the log). A driver that took
# the device off its list before closing its sockets let rmmod finish at
# once and the release run on in freed module code (helper-72's review);
# one that took it off last still left the release's last instructions
# to race rmmod (helper-73), which the sleep there makes an oops. Then
# the same with `rdma link delete` and, while that release sleeps, a new
# `rdma link add` on the same netdev, which must succeed once it is over.
test_unload_during_release() {
	released_seen=0
	local pid
	setup_bound_veth || fail "link add"
	echo 1000 > /sys/module/srdma/parameters/dealloc_delay_ms
	ip link del v0 &
	pid=$!
	released srdma0 || fail "no release under way"
	rmmod_waits "a netdev removal"
	wait $pid || fail "ip link del"
	dev_absent srdma0 || fail "srdma0 still there"

	setup_bound_veth || fail "link add (second)"
	echo 1000 > /sys/module/srdma/parameters/dealloc_delay_ms
	rdma link delete srdma0 &
	pid=$!
	released srdma0 || fail "no release under way"
	rdma link add srdma0 type srdma netdev v0 ||
		fail "link add during the release"
	wait $pid || fail "rdma link delete"
	echo 0 > /sys/module/srdma/parameters/dealloc_delay_ms
	ibv_devinfo -d srdma0 > /dev/null || fail "new srdma0 unusable"
	echo 1000 > /sys/module/srdma/parameters/dealloc_delay_ms
	rdma link delete srdma0 &
	pid=$!
	released srdma0 || fail "no release under way"
	rmmod_waits "rdma link delete"
	wait $pid || fail "rdma link delete (second)"
}

test_netdev_netns_move() {
	setup_bound_veth || fail "link add"
	ip netns add ns1 || fail "netns"
	ip link set v0 netns ns1 || fail "move"
	wait_for 5 dev_absent srdma0 || fail "srdma0 survived the move"
	# Bind again inside the namespace: srdma gets a socket there.
	ip netns exec ns1 ip link set v0 up
	ip netns exec ns1 rdma link add srdma0 type srdma netdev v0 ||
		fail "link add in ns1"
	ip netns exec ns1 ss -uln | grep -q ':4791' || fail "no UDP 4791 socket in ns1"
	# Deleting the namespace takes the netdev and then the device.
	ip netns del ns1
	wait_for 10 dev_absent srdma0 || fail "srdma0 survived its namespace"
	rmmod srdma || fail "rmmod"
}

test_udp_socket_lifetime() {
	setup_bound_veth || fail "link add"
	ss -uln | grep -q ':4791 ' || fail "no UDP 4791 socket"
	rdma link delete srdma0
	wait_for 5 dev_absent srdma0
	wait_for 5 sh -c "! ss -uln | grep -q ':4791 '" ||
		fail "socket left after the last device went"
}

test_port_taken_by_rxe() {
	modprobe rdma_rxe 2>/dev/null || return 4
	veth_setup || fail "veth"
	ss -uln | grep -q ':4791 ' || return 4	# this rxe binds lazily
	expect_err "Address already in use" rdma link add srdma0 type srdma netdev v0 || return 1
	dmesg | tail -3 | grep -q 'port taken' || fail "no message naming the port"
	# In its own namespace srdma works next to rxe.
	ip netns add ns1 && ip link set v1 netns ns1 || fail "netns"
	ip netns exec ns1 rdma link add srdma1 type srdma netdev v1 ||
		fail "link add in ns1 next to rxe"
}

test_port_state_follows_link() {
	setup_bound_veth || fail "link add"
	ip link set v0 down
	wait_for 5 sh -c "rdma link show srdma0/1 | grep -q 'state DOWN'" ||
		fail "port not DOWN: $(rdma link show srdma0/1)"
	ip link set v0 up
	wait_for 5 sh -c "rdma link show srdma0/1 | grep -q 'state ACTIVE'" ||
		fail "port not ACTIVE: $(rdma link show srdma0/1)"
}

test_mtu_follows_netdev() {
	setup_bound_veth || fail "link add"
	ibv_devinfo -d srdma0 | grep -q 'active_mtu:.*1024' || fail "mtu 1500 -> 1024"
	ip link set v0 mtu 9000 || fail "mtu 9000"
	ibv_devinfo -d srdma0 | grep -q 'active_mtu:.*4096' || fail "mtu 9000 -> 4096"
	ip link set v0 mtu 2200 || fail "mtu 2200"
	ibv_devinfo -d srdma0 | grep -q 'active_mtu:.*2048' || fail "mtu 2200 -> 2048"
}

test_ibv_devices() {
	setup_bound_veth || fail "link add"
	out=$(ibv_devices 2>&1)
	echo "$out"
	grep -qE '^\s+srdma0\s+[0-9a-f]{16}' <<< "$out" || fail "srdma0 not listed"
	! grep -qi 'warning\|fail' <<< "$out" || fail "ibv_devices complained"
}

# Any device name works with the stock tools, and an rxe device next to it
# stays with librxe. rdma_rxe holds UDP 4791 in init_net, so srdma's netdev
# goes to ns1; devices are visible in every namespace.
test_link_any_name() {
	modprobe rdma_rxe 2>/dev/null || return 4
	veth_setup || fail "veth"
	ip netns add ns1 && ip link set v0 netns ns1 || fail "netns"
	ip netns exec ns1 ip link set lo up
	ip netns exec ns1 ip link set v0 up
	ip netns exec ns1 rdma link add foo0 type srdma netdev v0 ||
		fail "link add foo0"
	rdma link add rxe0 type rxe netdev v1 || fail "link add rxe0"
	wait_for 5 sh -c "rdma link show foo0/1 | grep -q 'state ACTIVE'" ||
		fail "foo0 not ACTIVE: $(rdma link show)"

	out=$(ibv_devices 2>&1)
	echo "$out"
	grep -qE '^\s+foo0\s+[0-9a-f]{16}' <<< "$out" || fail "foo0 not listed"
	grep -qE '^\s+rxe0\s+[0-9a-f]{16}' <<< "$out" || fail "rxe0 not listed"
	! grep -qi 'warning\|fail' <<< "$out" || fail "ibv_devices complained"
	for ns in "" "ip netns exec ns1"; do
		out=$($ns ibv_devinfo -d foo0 2>&1) ||
			fail "${ns:+$ns }ibv_devinfo -d foo0: $out"
		grep -q 'state:.*PORT_ACTIVE' <<< "$out" ||
			fail "foo0 port not active: $out"
	done
	echo "$out"
	# libsrdma would open rxe0 with RDMA_DRIVER_UNKNOWN, which the kernel
	# refuses: a working context means librxe has it.
	out=$(ibv_devinfo -d rxe0 2>&1) || fail "ibv_devinfo -d rxe0: $out"
	echo "$out"
	grep -q 'transport:.*InfiniBand' <<< "$out" || fail "rxe0 transport"
	grep -q 'vendor_id:.*0xffffff' <<< "$out" || fail "rxe0 vendor_id"
	# With libsrdma as the only provider, foo0 is still listed and rxe0,
	# which libsrdma must not claim, is not. (A private mount namespace
	# hides /etc/libibverbs.d from this one command.)
	out=$(unshare -m sh -c \
		'mount -t tmpfs none /etc/libibverbs.d && ibv_devices' 2>&1)
	echo "$out"
	grep -qE '^\s+foo0\s' <<< "$out" || fail "libsrdma alone: no foo0"
	! grep -qE '^\s+rxe0\s' <<< "$out" || fail "libsrdma claimed rxe0"

	ip netns exec ns1 rdma link delete foo0 || fail "link delete foo0"
	wait_for 5 dev_absent foo0 || fail "foo0 still present"
	rdma link delete rxe0
}

test_ibv_devinfo() {
	setup_bound_veth || fail "link add"
	out=$(ibv_devinfo -v -d srdma0 2>&1) || fail "ibv_devinfo failed: $out"
	echo "$out"
	grep -q 'state:.*PORT_ACTIVE' <<< "$out" || fail "port not active"
	grep -q 'link_layer:.*Ethernet' <<< "$out" || fail "link layer"
	grep -q 'fw_ver:.*0.1.0' <<< "$out" || fail "fw_ver"
	grep -qE 'GID\[ *[0-9]+\]:.*::ffff:10.0.0.1, RoCE v2' <<< "$out" ||
		fail "no RoCEv2 GID for 10.0.0.1"
	grep -qE 'GID\[ *[0-9]+\]:.*fe80::.*RoCE v2' <<< "$out" ||
		fail "no RoCEv2 link-local GID"
	grep -qE 'max_qp:\s+[1-9]' <<< "$out" || fail "max_qp"
	grep -qE 'max_qp_rd_atom:\s+[1-9]' <<< "$out" || fail "max_qp_rd_atom"
}

test_ipv6_gid() {
	setup_bound_veth || fail "link add"
	ip addr add 2001:db8::1/64 dev v0 nodad || fail "ipv6 addr"
	wait_for 5 sh -c "ibv_devinfo -v -d srdma0 | grep -q '2001:db8::1, RoCE v2'" ||
		fail "no GID for 2001:db8::1"
	ip addr del 2001:db8::1/64 dev v0
	wait_for 5 sh -c "! ibv_devinfo -v -d srdma0 | grep -q '2001:db8::1'" ||
		fail "GID not removed with the address"
}

# rmmod while a process holds the device open: srdma implements
# disassociate_ucontext, so the unload goes ahead, the context is cut off,
# and the process sees errors instead of hanging the unload.
test_unload_while_open() {
	setup_bound_veth || fail "link add"
	coproc HOLD { srdma_hold 2>&1; }
	hold_pid=$HOLD_PID
	read -r -t 20 line <&"${HOLD[0]}" || fail "holder did not start"
	[ "$line" = ready ] || fail "holder: $line"
	timeout 30 rmmod srdma || fail "rmmod with the device open"
	dev_absent srdma0 || fail "srdma0 still present"
	echo go >&"${HOLD[1]}"
	cat <&"${HOLD[0]}"
	wait "$hold_pid" || fail "holder: query after unload did not fail"
}

test_link_delete_while_open() {
	setup_bound_veth || fail "link add"
	coproc HOLD { srdma_hold 2>&1; }
	hold_pid=$HOLD_PID
	read -r -t 20 line <&"${HOLD[0]}" || fail "holder did not start"
	[ "$line" = ready ] || fail "holder: $line"
	timeout 30 rdma link delete srdma0 || fail "link delete with the device open"
	wait_for 5 dev_absent srdma0 || fail "srdma0 still present"
	echo go >&"${HOLD[1]}"
	cat <&"${HOLD[0]}"
	wait "$hold_pid" || fail "holder: query after delete did not fail"
	rmmod srdma || fail "rmmod after the holder exited"
}

# A NIC of the VM (no rtnl_link_ops: a deleted namespace gives it back to
# init_net): the netdev's name, or nothing.
spare_nic() {
	local d i
	# The one-guest VM's init loads no NIC driver (stage2 does, for a wire).
	modprobe virtio_net 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		compgen -G '/sys/bus/virtio/drivers/virtio_net/virtio*' > /dev/null && break
		sleep 0.1
	done
	for d in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = virtio_net ] &&
			{ echo "${d##*/}"; return 0; }
	done
	return 1
}

# A NIC in a namespace goes back to init_net when the namespace is deleted,
# and nothing then waits for srdma's device (a veth is deleted, and its
# deletion waits): the device's QPs may be destroyed after the namespace
# is freed. A QP's IPv6 route is of that namespace (its dst_ops are in
# struct net), and releasing it then reads and writes freed memory
# (helper-87): srdma drops the routes as the namespace goes. An RC QP over
# IPv6 is held in RTS, destroy_qp sleeps 8 s (destroy_delay_ms) when the
# device goes, the namespace is deleted; the debug kernel's KASAN reports
# the use after free without the fix, which the runner's kernel log
# check fails on.
test_netns_moved_nic() {
	local nic mark
	nic=$(spare_nic) || { echo "no NIC in this VM (scripts/vm/run gives one)"; return 4; }
	modprobe srdma || fail "modprobe"
	ip netns add nsm || fail "netns"
	ip link set "$nic" netns nsm || fail "move $nic"
	ip -n nsm link set "$nic" up || fail "up"
	ip -n nsm -6 addr add fd00:4791::1/64 dev "$nic" nodad || fail "address"
	ip -n nsm -6 neigh add fd00:4791::2 lladdr 02:00:00:00:47:92 dev "$nic" ||
		fail "neighbour"
	ip netns exec nsm rdma link add srdmam type srdma netdev "$nic" ||
		fail "link add"
	wait_for 5 sh -c "ibv_devinfo -v -d srdmam | grep -q 'fd00:4791::1'" ||
		fail "no GID for fd00:4791::1"
	echo 8000 > /sys/module/srdma/parameters/destroy_delay_ms
	# Held from init_net: a process in nsm would keep the namespace alive.
	coproc HOLD { SRDMA_DEV=srdmam srdma_hold -6 fd00:4791::1,fd00:4791::2 2>&1; }
	hold_pid=$HOLD_PID
	read -r -t 20 line <&"${HOLD[0]}" || fail "holder did not start"
	[ "$line" = ready ] || fail "holder: $line"
	mark=$(dmesg | wc -l)
	ip netns del nsm || fail "netns del"
	wait_for 30 dev_absent srdmam || fail "srdmam survived its namespace"
	[ -e "/sys/class/net/$nic" ] || fail "$nic is not back in init_net"
	dmesg | tail -n +$((mark + 1)) | grep -q 'destroy sleeps 8000 ms' ||
		fail "the QP was not destroyed after the namespace (destroy_delay_ms)"
	# Traced (function tracer, 2026-12-05): without the drop, the QP
	# released its route 4 s after net_free() of its namespace, and
	# dst_destroy() ran on it then.
	dmesg | tail -n +$((mark + 1)) |
		grep -q 'srdmam: qp [0-9]*: route dropped, its namespace is going away' ||
		fail "the QP's route was not dropped with its namespace"
	echo 0 > /sys/module/srdma/parameters/destroy_delay_ms
	echo go >&"${HOLD[1]}"
	cat <&"${HOLD[0]}"
	wait "$hold_pid" || fail "holder: query after removal did not fail"
	sleep 2		# RCU callbacks: a route released late is freed there
}

# Names that rdma-core's rxe provider would claim are refused, with a reason.
test_link_rxe_name_refused() {
	modprobe srdma || fail "modprobe"
	veth_setup || fail "veth"
	expect_err "Invalid argument" rdma link add rxe_s type srdma netdev v0
	dev_absent rxe_s || fail "rxe_s exists"
	dmesg | tail -5 | grep -q "names starting with rxe" ||
		fail "no kernel message saying why"
	rdma link add srdma0 type srdma netdev v0 || fail "a good name after it"
}

# In exclusive netns mode the core re-enables a device after it moves to
# another namespace (and back, when that namespace is deleted): the device
# must come through both moves quietly, working, and bound once.
test_ibdev_netns_exclusive() {
	local mark rc=0
	setup_bound_veth || fail "link add"
	mark=$(dmesg | wc -l)
	rdma system set netns exclusive || fail "exclusive mode"
	{
		ip netns add ns2 &&
		rdma dev set srdma0 netns ns2 &&
		ip netns exec ns2 rdma dev show srdma0 >/dev/null &&
		! rdma dev show srdma0 >/dev/null 2>&1 &&
		ip netns del ns2 &&
		wait_for 10 dev_exists srdma0
	} || rc=1
	rdma system set netns shared
	[ $rc = 0 ] || fail "move to ns2 and back"
	! dmesg | tail -n +$((mark + 1)) | grep -E "bound to|re-enable|went away" ||
		fail "enable_driver acted on a namespace move"
	ibv_devinfo -d srdma0 | grep -q PORT_ACTIVE || fail "srdma0 not active after the moves"
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Install srdma as a user of a Debian 12 machine would, in a test VM of
# its own (scripts/run-tests boots it): the Debian packages, an upgrade to
# a newer version, their removal, then "make install" and "make uninstall"
# from the tree. DKMS compiles the module once: a build takes over ten
# minutes under emulation, so the first version is installed while the
# running kernel's headers are away (DKMS only adds its source, as on a
# machine without headers), and the upgrade builds the second. Nothing of
# srdma is in place when it starts (no test copied the module in), and
# every tool runs with no environment variable pointing at srdma: what
# the system finds by itself is what is tested.
#
# usage: packaging.sh DEBDIR NEXTDIR
#   DEBDIR   srdma-dkms_V_all.deb and libsrdma1_V_*.deb (make deb)
#   NEXTDIR  the same packages at a higher version (selftests/pkg/build-debs)
# Prints KTAP, one line per step.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/lib.sh
. "$here/../lib.sh"
unset RDMAV_DRIVERS
debdir=$1 nextdir=$2
kver=$(uname -r)
n=0 failed=0
export DEBIAN_FRONTEND=noninteractive

# step NAME FUNCTION: one KTAP line; a failed step prints its output.
step() {
	local out rc
	n=$((n + 1))
	out=$("$2" 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		echo "ok $n $1"
		grep '^# ' <<< "$out"
	else
		failed=$((failed + 1))
		echo "not ok $n $1"
		tail -40 <<< "$out" | sed 's/^/# /'
	fi
}

# The stock tools with a clean environment.
clean_env() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# Every trace of srdma a package or "make install" could leave.
leftovers() {
	find /lib/modules -name 'srdma.ko*' 2>/dev/null
	ls -d /usr/src/srdma-* /var/lib/dkms/srdma /etc/libibverbs.d/srdma.driver \
	      /usr/lib/*/libibverbs/libsrdma* /usr/share/man/man7/srdma.7* 2>/dev/null
	dpkg-query -W -f='${Package} ${Status}\n' srdma-dkms libsrdma1 2>/dev/null |
		grep -v 'not-installed'
}

nothing_left() {
	local l
	l=$(leftovers)
	[ -z "$l" ] || { echo "left behind:"; echo "$l"; return 1; }
	! modinfo srdma > /dev/null 2>&1 || { echo "modinfo still finds srdma"; return 1; }
	! lsmod | grep -q '^srdma ' || { echo "srdma still loaded"; return 1; }
}

# srdma0 on a veth, the module loaded by "rdma link add" itself (its
# rdma-link-srdma alias), the provider found through
# /etc/libibverbs.d: ibv_devices lists srdma0 and ibv_rc_pingpong
# (100 round trips, loopback on srdma0) passes. Prints the loaded version.
use_it() {
	local gid
	! lsmod | grep -q '^srdma ' || { echo "srdma loaded before rdma link add"; return 1; }
	veth_setup || return 1
	rdma link add srdma0 type srdma netdev v0 || return 1
	lsmod | grep -q '^srdma ' || { echo "rdma link add did not load srdma"; return 1; }
	clean_env ibv_devices | grep -qw srdma0 ||
		{ clean_env ibv_devices; echo "ibv_devices does not list srdma0"; return 1; }
	gid=$(roce2_ipv4_gid srdma0) || { echo "no IPv4 GID"; return 1; }
	client_server "env -i PATH=/usr/bin:/bin ibv_rc_pingpong -d srdma0 -g $gid -n 100" \
		"env -i PATH=/usr/bin:/bin ibv_rc_pingpong -d srdma0 -g $gid -n 100 127.0.0.1" ||
		{ echo "ibv_rc_pingpong failed"; return 1; }
	grep -q '100 iters' /tmp/client.log || { echo "no 100 iterations"; return 1; }
	echo "# loaded srdma $(cat /sys/module/srdma/version), $(modinfo -F filename srdma)"
}

# Device, veth and module gone, as before a package change.
put_away() {
	rdma link delete srdma0 2>/dev/null
	ip link del v0 2>/dev/null
	if lsmod | grep -q '^srdma '; then rmmod srdma || return 1; fi
}

version_of() { dpkg-deb -f "$1" Version; }

t_clean_start() {
	nothing_left
}

# apt_get DIR: apt installs both packages of DIR offline (their
# dependencies are on this system). Prints their version; leaves DKMS's
# status in /tmp/dkms.log.
apt_get() {
	local v
	v=$(version_of "$1"/srdma-dkms_*_all.deb) || return 1
	apt-get install -y -q "$1"/srdma-dkms_*_all.deb "$1"/libsrdma1_*.deb \
		> /tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; return 1; }
	dkms status srdma > /tmp/dkms.log
	echo "$v"
}

# apt_install DIR: apt_get, and DKMS must have built and installed the
# module of their version for the running kernel, the one modinfo finds
# (in updates/dkms/). Prints the version.
apt_install() {
	local v
	v=$(apt_get "$1") || return 1
	grep -q "^srdma/$v, $kver, [^:]*: installed" /tmp/dkms.log ||
		{ cat /tmp/dkms.log >&2; echo "DKMS did not install srdma $v for $kver" >&2; return 1; }
	[ "$(modinfo -F version srdma)" = "$v" ] ||
		{ echo "modinfo: version $(modinfo -F version srdma), want $v" >&2; return 1; }
	case $(modinfo -F filename srdma) in
	/lib/modules/$kver/updates/dkms/srdma.ko*) ;;
	*) echo "module at $(modinfo -F filename srdma)" >&2; return 1 ;;
	esac
	echo "$v"
}

# The first version, with the running kernel's headers away: the
# packages install, the provider and the man page are in place, and DKMS
# has the source added but built nothing (apt says why).
t_deb_install() {
	local v b=/lib/modules/$kver/build rc=0
	mv "$b" "$b.away" || return 1
	v=$(apt_get "$debdir") || rc=1
	mv "$b.away" "$b" || return 1
	[ $rc = 0 ] || return 1
	grep -q "^srdma/$v: added" /tmp/dkms.log ||
		{ cat /tmp/dkms.log; echo "DKMS status is not srdma/$v: added"; return 1; }
	grep -q "skipped since the" /tmp/apt.log ||
		{ cat /tmp/apt.log; echo "apt did not say the build was skipped"; return 1; }
	! modinfo srdma > /dev/null 2>&1 || { echo "a module without a build"; return 1; }
	[ -f /etc/libibverbs.d/srdma.driver ] || { echo "no srdma.driver"; return 1; }
	man -w srdma > /dev/null || { echo "no srdma(7)"; return 1; }
	echo "# srdma-dkms and libsrdma1 $v installed, without headers: DKMS added the source"
	sed 's/^/# dkms: /' /tmp/dkms.log
}

# A newer version over the old one, with the headers present: DKMS drops
# the old one and builds and installs the new, which rdma link add loads.
t_deb_upgrade() {
	local old new
	old=$(version_of "$debdir"/srdma-dkms_*_all.deb)
	new=$(version_of "$nextdir"/srdma-dkms_*_all.deb)
	dpkg --compare-versions "$new" gt "$old" || { echo "$new is not above $old"; return 1; }
	[ "$(apt_install "$nextdir")" = "$new" ] || return 1
	! grep -q "^srdma/$old," /tmp/dkms.log || { echo "DKMS still has $old"; return 1; }
	[ ! -e "/usr/src/srdma-$old" ] || { echo "/usr/src/srdma-$old left"; return 1; }
	echo "# upgraded $old -> $new, module built by DKMS"
	sed 's/^/# dkms: /' /tmp/dkms.log
}

t_deb_use() {
	local want
	want=$(version_of "$nextdir"/srdma-dkms_*_all.deb)
	use_it || return 1
	[ "$(cat /sys/module/srdma/version)" = "$want" ] ||
		{ echo "loaded version $(cat /sys/module/srdma/version), want $want"; return 1; }
	put_away
}

t_deb_purge() {
	apt-get remove --purge -y -q srdma-dkms libsrdma1 > /tmp/apt.log 2>&1 ||
		{ cat /tmp/apt.log; return 1; }
	nothing_left || return 1
	! clean_env ibv_devices 2>/dev/null | grep -q srdma ||
		{ echo "ibv_devices still lists srdma"; return 1; }
}

# The tree's own install, for people who want no package: the same files
# in the same places (the module in updates/, built for the running
# kernel), then "make uninstall" takes them all away again.
t_make_install() {
	make -s -C "$SRDMA_ROOT" install > /tmp/make.log 2>&1 ||
		{ cat /tmp/make.log; return 1; }
	[ -f "/lib/modules/$kver/updates/srdma.ko" ] || { echo "no updates/srdma.ko"; return 1; }
	man -w srdma > /dev/null || { echo "no srdma(7)"; return 1; }
	use_it && put_away || return 1
	make -s -C "$SRDMA_ROOT" uninstall > /tmp/make.log 2>&1 ||
		{ cat /tmp/make.log; return 1; }
	nothing_left
}

echo "KTAP version 1"
mark=$(dmesg | wc -l)
# DKMS builds for every kernel whose headers it finds (6.12 from
# bookworm-backports too, where installed), and each build takes minutes
# under emulation: this guest runs one kernel, so the others' headers are
# hidden (in the guest's throwaway overlay).
for b in /lib/modules/*/build; do
	[ "$b" = "/lib/modules/$kver/build" ] || mv "$b" "$b.hidden"
done
step clean_start t_clean_start
step deb_install t_deb_install
step deb_upgrade t_deb_upgrade
step deb_use t_deb_use
step deb_purge t_deb_purge
step make_install t_make_install
n=$((n + 1))
bad=$(dmesg | tail -n +$((mark + 1)) | dmesg_bad)
if [ -z "$bad" ]; then
	echo "ok $n dmesg"
else
	failed=$((failed + 1))
	echo "not ok $n dmesg"
	sed 's/^/# /' <<< "$bad"
fi
[ $failed = 0 ]

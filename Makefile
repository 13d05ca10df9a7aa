# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# srdma top-level Makefile.
#   make            build the module, the provider and the selftests
#   make check      install what is missing, build, run every test
#   make check-debug the same on a debug kernel (built once, ~1 h)
#   make check-storage the long storage runs across two guests: 1% loss,
#                   link failure, rdma link delete under NVMe-oF and NFS
#   make check-more the one-guest versions of scenarios make check runs
#                   across two guests (NVMe-oF, NFS, UCX, MPI, perftest
#                   atomics), which it leaves out for time (~5 min)
#   make demo       install what is missing, build, show srdma0 in a test VM
#   make lint       checkpatch --strict and sparse on the driver
#   make install    install the module and the provider on this machine
#                   (DESTDIR, KVER honoured); make uninstall undoes it
#   make deb        the Debian packages srdma-dkms and libsrdma1, in build/deb
#   make check-pkg  install, upgrade and purge them in a test VM (~20 min;
#                   make check runs it too, beside the one-guest suite)
#   make check-hpc  UCX and Open MPI across two guests, the whole set (put,
#                   get, atomics, MPI over TCP, 1% loss, and against
#                   rdma_rxe); make check runs the shorter one
#   make check-pyverbs-rxe  rdma-core's pyverbs suite on rdma_rxe, whose
#                   passes (selftests/pyverbs/rxe0-passes) srdma must pass

ROOT     := $(CURDIR)
BUILD    := $(ROOT)/build
KVER     = $(shell $(ROOT)/scripts/kver 2>/dev/null)
# KVER on the command line (make install KVER=...) also picks that kernel's
# headers to build against.
# So does make check KVER=...: its test VMs boot that kernel (scripts/kver
# answers SRDMA_KVER).
ifeq ($(origin KVER),command line)
KDIR     ?= /lib/modules/$(KVER)/build
export SRDMA_KVER := $(KVER)
endif
# Otherwise the running kernel's, or on a machine whose kernel has no
# headers (a build host, CI) those of the kernel the test VM boots.
KDIR     ?= $(shell if [ -d /lib/modules/$$(uname -r)/build ]; then \
		echo /lib/modules/$$(uname -r)/build; \
	    else v=$$($(ROOT)/scripts/kver 2>/dev/null) && \
		[ -d /usr/src/linux-headers-$$v ] && echo /usr/src/linux-headers-$$v; fi)
# One spelling per tree (/lib/modules/KVER/build is a symlink): kbuild
# rebuilds everything when the path it was run from changes.
override KDIR := $(or $(realpath $(KDIR)),$(KDIR))
KSRC_TAR ?= $(lastword $(sort $(wildcard /usr/src/linux-source-*.tar.xz)))

CC       ?= gcc
USER_CFLAGS := -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE

DRV      := drivers/infiniband/sw/srdma
PROV_SO  := $(BUILD)/provider/libsrdma-rdmav34.so
KSELFTEST := $(BUILD)/kselftest/kselftest_harness.h
CHECKPATCH := $(BUILD)/checkpatch/checkpatch.pl

# kselftest_harness.h's macros trip these -Wextra checks in every test.
HARNESS_CFLAGS := -Wno-sign-compare -Wno-unused-parameter \
		  -Wno-misleading-indentation

LINT_FILES = $(filter-out %.mod.c $(DRV)/srdma_compat.h, \
		$(wildcard $(DRV)/*.c $(DRV)/*.h)) \
	     include/uapi/rdma/srdma-abi.h
# The compatibility header is where kernel versions are compared, which
# checkpatch warns of in code meant for mainline: those two checks only.
LINT_COMPAT_IGNORE := LINUX_VERSION_CODE,CONSTANT_COMPARISON

# Every selftests/srdma_*.c is one program, built to build/selftests/ (on
# the guest's PATH): a new test program needs no line here. Who runs it is
# said in one place, selftests/run.sh or the selftests/tests/*.sh script
# that uses it (see Documentation/testing.rst, "Adding a test").
SELFTEST_BINS := $(patsubst selftests/%.c,$(BUILD)/selftests/%, \
		   $(wildcard selftests/srdma_*.c))

# The wire-format unit tests and fuzzer (selftests/unit) run on the host,
# from build/tools/ where scripts/run-tests looks for them.
UNIT     := selftests/unit
WIRE_TEST := $(BUILD)/tools/wire_test
WIRE_FUZZ := $(BUILD)/tools/wire_fuzz

.PHONY: all module provider selftests check check-debug check-more check-storage check-hpc check-pyverbs-rxe demo lint install clean deps fuzz bench \
	install-provider install-dkms uninstall deb check-pkg

all: module provider selftests

deps:
	@$(ROOT)/scripts/install-deps

module:
	@test -n "$(KDIR)" || { echo "no kernel headers: run scripts/install-deps" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT) modules
	@$(ROOT)/scripts/mkmodroot

provider: $(PROV_SO) $(BUILD)/provider/srdma.driver

$(BUILD)/provider/check-pabi:
	@mkdir -p $(dir $@)
	@lib=$$(ldconfig -p | awk '/libibverbs.so.1 / {print $$NF; exit}'); \
	if ! objdump -T "$$lib" 2>/dev/null | grep -q 'IBVERBS_PRIVATE_34'; then \
		echo "error: $$lib does not export IBVERBS_PRIVATE_34;" \
		     "libsrdma needs rdma-core 44 (Debian 12's libibverbs1)" >&2; \
		exit 1; \
	fi; touch $@

$(PROV_SO): tools/provider/srdma.c tools/provider/verbs_private.h \
	    include/uapi/rdma/srdma-abi.h $(BUILD)/provider/check-pabi
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(PROV_CFLAGS) -fPIC -shared \
		-Wl,-soname,libsrdma-rdmav34.so $(PROV_LDFLAGS) \
		-o $@ tools/provider/srdma.c -libverbs

$(BUILD)/provider/srdma.driver:
	@mkdir -p $(dir $@)
	echo "driver srdma" > $@

# kselftest headers and checkpatch come from Debian's linux-source package
# at build time; they are never committed.
$(KSELFTEST):
	@test -n "$(KSRC_TAR)" || { echo "linux-source missing: run scripts/install-deps" >&2; exit 1; }
	@mkdir -p $(dir $@)
	tar -xJf $(KSRC_TAR) -C $(dir $@) --strip-components=4 --wildcards \
		'*/tools/testing/selftests/kselftest*.h'
	@touch $@

$(CHECKPATCH):
	@mkdir -p $(dir $@)
	tar -xJf $(KSRC_TAR) -C $(dir $@) --strip-components=2 \
		--wildcards '*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	@touch $@

# The MPI check program (selftests/mpi, tests/ucx.sh), where Open MPI's
# mpicc is installed.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
MPI_BINS := $(if $(MPICC),$(BUILD)/selftests/srdma_mpi_check \
	$(BUILD)/selftests/srdma_mpi_pingpong)

# LD_PRELOAD for perftest's -R clients (selftests/lib.sh, perftest_cm_race).
CM_DELAY_SO := $(BUILD)/selftests/srdma_cm_delay.so

selftests: $(SELFTEST_BINS) $(WIRE_TEST) $(MPI_BINS) $(CM_DELAY_SO)

$(CM_DELAY_SO): selftests/preload/srdma_cm_delay.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fPIC -shared -o $@ $< -ldl

$(BUILD)/selftests/srdma_mpi_check: selftests/mpi/srdma_mpi_check.c
	@mkdir -p $(dir $@)
	$(MPICC) $(USER_CFLAGS) -o $@ $<

$(BUILD)/selftests/srdma_mpi_pingpong: selftests/mpi/srdma_mpi_pingpong.c
	@mkdir -p $(dir $@)
	$(MPICC) $(USER_CFLAGS) -o $@ $<

# The wire-format unit, srdma_wire.c from the driver's own directory, built
# for user space with selftests/unit's stand-ins for the kernel headers.
WIRE_USER_SRCS := $(DRV)/srdma_wire.c $(UNIT)/crc32.c
WIRE_USER_DEPS := $(WIRE_USER_SRCS) $(DRV)/srdma_wire.h $(UNIT)/wire_compat.h

$(WIRE_TEST): $(UNIT)/wire_test.c $(WIRE_USER_DEPS) $(KSELFTEST)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) -isystem $(BUILD)/kselftest \
		-I$(DRV) -I$(UNIT) -o $@ $(UNIT)/wire_test.c $(WIRE_USER_SRCS)

# The ring tests write the uapi structs themselves: rebuilt when they change.
$(BUILD)/selftests/%: selftests/%.c selftests/srdma_test.h $(KSELFTEST) \
		      include/uapi/rdma/srdma-abi.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) -isystem $(BUILD)/kselftest \
		-Iinclude/uapi -o $@ $< \
		-libverbs -lpthread

# The same parser under libFuzzer with ASan/UBSan (clang from Debian).
FUZZ_CC ?= clang
fuzz: $(WIRE_FUZZ)

$(WIRE_FUZZ): $(UNIT)/wire_fuzz.c $(WIRE_USER_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(DRV) -I$(UNIT) -o $@ $(UNIT)/wire_fuzz.c $(WIRE_USER_SRCS)

lint: $(CHECKPATCH)
	$(CHECKPATCH) --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES -f $(LINT_FILES)
	$(CHECKPATCH) --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,$(LINT_COMPAT_IGNORE) -f $(DRV)/srdma_compat.h
	@# C=2 runs sparse on every file, built or not: no clean needed (a
	@# kbuild clean would also delete build/modroot's module indexes).
	@$(MAKE) -C $(KDIR) M=$(ROOT) C=2 modules 2>&1 | tee $(BUILD)/sparse.log
	@$(ROOT)/scripts/mkmodroot
	@if grep -E '(warning|error):' $(BUILD)/sparse.log; then \
		echo "sparse: not clean" >&2; exit 1; fi
	@# Every shell script parses (a guest that sources a broken one
	@# fails its whole phase).
	@for f in $$(grep -lr '^#!/bin/bash' $(ROOT)/selftests $(ROOT)/scripts \
		     $(ROOT)/tools $(ROOT)/.ci); do \
		bash -n "$$f" || { echo "bash -n: $$f" >&2; exit 1; }; done
	@echo "lint: clean"

check: deps
	@$(MAKE) --no-print-directory all fuzz
	@$(ROOT)/scripts/run-tests $(if $(TESTS),'$(TESTS)')

# The one-guest tests make check leaves out for time (selftests/run.sh's
# MORE): each has a two-guest counterpart in make check.
check-more: deps
	@$(MAKE) --no-print-directory all
	@$(ROOT)/scripts/run-tests more

# NVMe over Fabrics and NFS over RDMA across two guests with 1% loss, the
# link down under fio and rdma link delete under both (about an hour; see
# Documentation/storage.rst). make check runs the short set.
check-storage: deps
	@$(MAKE) --no-print-directory all
	@$(ROOT)/selftests/wire/storage-run long

# rdma-core's pyverbs suite on rdma_rxe, in a guest of its own: the tests
# it passes go to selftests/pyverbs/rxe0-passes, every one of which
# make check requires srdma0 to pass.
check-pyverbs-rxe: deps
	@$(MAKE) --no-print-directory all
	@SRDMA_PYVERBS_RXE=1 SRDMA_GUEST_ENV=SRDMA_PYVERBS_RXE \
		$(ROOT)/scripts/vm/run -t 1200 -o $(BUILD)/pyverbs-rxe \
		$(ROOT)/selftests/run.sh '^pyverbs_rxe$$'
	@test -s $(BUILD)/pyverbs-rxe/rxe0-passes
	@{ echo "# rdma_rxe's pyverbs passes (make check-pyverbs-rxe, $$($(ROOT)/scripts/kver))"; \
	   cat $(BUILD)/pyverbs-rxe/rxe0-passes; } > $(ROOT)/selftests/pyverbs/rxe0-passes
	@echo "rxe0: $$(grep -vc '^#' $(ROOT)/selftests/pyverbs/rxe0-passes) passes"

check-hpc: deps
	@$(MAKE) --no-print-directory all
	@SRDMA_HPC_MODE=full $(ROOT)/scripts/run-tests '^wire-hpc-'

# The whole suite on a debug kernel (KASAN, lockdep, UBSAN, kmemleak, fault
# injection) built once per machine from linux-source (scripts/debug-kernel),
# with srdma built against it. Green only with no debug-kernel report.
check-debug: deps
	@set -e; eval "$$($(ROOT)/scripts/debug-kernel -q)"; \
	export SRDMA_KVER SRDMA_KIMAGE SRDMA_MODBASE SRDMA_KAPPEND; \
	$(MAKE) --no-print-directory KDIR=$$SRDMA_KDIR all fuzz; \
	SRDMA_VM_TIMEOUT=$${SRDMA_VM_TIMEOUT:-9000} $(ROOT)/scripts/run-tests \
		$(if $(TESTS),'$(TESTS)')

bench: deps
	@command -v gnuplot >/dev/null || DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends gnuplot-nox
	@$(MAKE) --no-print-directory all
	@$(ROOT)/tools/bench/run
	@$(ROOT)/tools/bench/loss-run
	@$(ROOT)/tools/bench/storage-run
	@$(ROOT)/tools/bench/hpc-run
	@$(ROOT)/tools/bench/profile

# The demo needs no second kernel (install-deps would fetch 6.12).
demo:
	@SRDMA_NO_SECOND_KERNEL=1 $(ROOT)/scripts/install-deps
	@$(MAKE) --no-print-directory all
	@$(ROOT)/scripts/demo

# The release, one line; debian/changelog's top entry must say the same.
VERSION  := $(shell cat $(ROOT)/VERSION)
LIBDIR   ?= /usr/lib/$(shell $(CC) -dumpmachine)
PROV_DIR  = $(DESTDIR)$(LIBDIR)/libibverbs
DKMS_VERSION ?= $(VERSION)
DKMS_SRC  = $(DESTDIR)/usr/src/srdma-$(DKMS_VERSION)

# The driver only: the test modules of selftests/kmod stay in the tree.
# The kernel it goes to is the one it was built for (its vermagic): the
# running kernel's, or KVER's. depmod runs only for a real install.
install: module provider install-provider
	v=$$(modinfo -F vermagic $(ROOT)/$(DRV)/srdma.ko | cut -d' ' -f1) && \
	install -D -m 0644 $(ROOT)/$(DRV)/srdma.ko \
		$(DESTDIR)/lib/modules/$$v/updates/srdma.ko && \
	if [ -z "$(DESTDIR)" ]; then depmod -a $$v; fi
	install -D -m 0644 $(ROOT)/Documentation/srdma.7 \
		$(DESTDIR)/usr/share/man/man7/srdma.7

# The provider and its driver file, where libibverbs looks for them.
install-provider: provider
	install -D -m 0644 $(PROV_SO) $(PROV_DIR)/libsrdma-rdmav34.so
	install -D -m 0644 $(BUILD)/provider/srdma.driver \
		$(DESTDIR)/etc/libibverbs.d/srdma.driver

# The module's source as DKMS wants it (/usr/src/srdma-VERSION): then
# "dkms install srdma/VERSION" builds and installs it for a kernel.
install-dkms:
	install -d $(DKMS_SRC)/$(DRV) $(DKMS_SRC)/include/uapi/rdma
	install -m 0644 $(DRV)/Kbuild $(DRV)/*.c $(DRV)/*.h $(DKMS_SRC)/$(DRV)/
	install -m 0644 include/uapi/rdma/srdma-abi.h $(DKMS_SRC)/include/uapi/rdma/
	echo $(DKMS_VERSION) > $(DKMS_SRC)/VERSION
	sed 's/#MODULE_VERSION#/$(DKMS_VERSION)/' dkms.conf > $(DKMS_SRC)/dkms.conf
	chmod 0644 $(DKMS_SRC)/VERSION $(DKMS_SRC)/dkms.conf

# What "make install" put in place, for every kernel (not DKMS's copies,
# which "dkms remove" or the package take away).
uninstall:
	rm -f $(PROV_DIR)/libsrdma-rdmav34.so $(DESTDIR)/etc/libibverbs.d/srdma.driver
	rm -f $(DESTDIR)/usr/share/man/man7/srdma.7
	for m in $(DESTDIR)/lib/modules/*/updates/srdma.ko; do \
		[ -e "$$m" ] || continue; rm -f "$$m"; \
		v=$${m#$(DESTDIR)/lib/modules/}; v=$${v%%/*}; \
		if [ -z "$(DESTDIR)" ]; then depmod -a $$v; fi; \
	done

check-pkg: deps
	@$(MAKE) --no-print-directory all
	@$(ROOT)/scripts/check-pkg

# Debian packages from the committed files (git ls-files; outside git,
# every file but build/), built with
# Debian's tooling in build/deb/srdma-VERSION, then checked by lintian.
deb:
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version) && \
	[ "$$v" = "$(VERSION)" ] || { echo "deb: debian/changelog says $$v," \
		"VERSION says $(VERSION)" >&2; exit 1; }
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/srdma-$(VERSION)
	cd $(ROOT) && if git rev-parse --git-dir > /dev/null 2>&1; then \
		git ls-files -z; \
	else \
		find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0; \
	fi | xargs -0 cp --parents -t $(BUILD)/deb/srdma-$(VERSION)
	cd $(BUILD)/deb/srdma-$(VERSION) && \
		dpkg-buildpackage -us -uc -b > ../build.log 2>&1 || \
		{ tail -30 ../build.log; exit 1; }
	lintian --fail-on error,warning $(BUILD)/deb/*.changes
	@ls $(BUILD)/deb/*.deb

clean:
	-$(MAKE) -C $(KDIR) M=$(ROOT) clean
	rm -rf $(BUILD)

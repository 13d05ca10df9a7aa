#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Run rdma-core's pyverbs test suite (python3-pyverbs ships it, gzipped, in
# /usr/share/doc/rdma-core/tests) against one RDMA device.
#
# usage: run.py SUITE_DIR RESULTS --dev DEV --gid N [-v] [UNITTEST NAMES...]
#   SUITE_DIR  an unpacked copy of the suite (the .gz files gunzipped)
#   RESULTS    file to write, one line per test: pass|fail|error|skip ID,
#              then for a skip its reason
# Prints unittest's usual report, then one line
#   pyverbs DEV: ran N, passed N, failed N, errors N, skipped N
# and exits 0 when nothing failed or errored.
#
# This is the suite's own run_tests.py with two changes: the outcomes are
# recorded (above), and the netdev is found another way. The suite finds the
# IP address of a device's netdev under /sys/class/infiniband/DEV/device/net/,
# that is through the ib_device's parent device, and skips every rdma_cm
# test ("doesn't have net interface") when there is none. A device bound to
# a virtual netdev (veth, in the single test VM, which has no NIC) has no
# parent. When that directory is absent, this runner asks the RDMA core
# instead: the netdev of the GID in use (ports/P/gid_attrs/ndevs/N), the
# netdev an rdma_cm address resolves to. Nothing else in the suite changes.
import os
import sys
from importlib.machinery import SourceFileLoader

suite = os.path.abspath(sys.argv.pop(1))
results = sys.argv.pop(1)
sys.path.insert(0, suite)

from args_parser import parser  # noqa: E402
import unittest  # noqa: E402

tests = SourceFileLoader('tests', os.path.join(suite, '__init__.py')).load_module()
base = sys.modules['tests.base']
suite_get_ip_mac = base.RDMATestCase._get_ip_mac


def gid_netdev(dev, port, idx):
    """The netdev the RDMA core ties GID @idx of @dev/@port to, or None."""
    if idx is None:
        return None
    try:
        with open('/sys/class/infiniband/{}/ports/{}/gid_attrs/ndevs/{}'
                  .format(dev, port, idx)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def get_ip_mac(self, dev, port, idx):
    ndev = gid_netdev(dev, port, idx)
    if os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)) \
            or not ndev:
        return suite_get_ip_mac(self, dev, port, idx)
    try:
        ip_addr, mac_addr = self.get_ip_mac_address(ndev)
    except (KeyError, IndexError):
        self.args.append([dev, port, idx, None, None])
    else:
        self.args.append([dev, port, idx, ip_addr, mac_addr])


class Result(unittest.TextTestResult):
    """unittest's result, plus each test's outcome in order."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.append(('pass', test.id(), ''))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcomes.append(('pass', test.id(), ''))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcomes.append(('fail', test.id(), ''))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes.append(('fail', test.id(), ''))

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes.append(('error', test.id(), ''))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes.append(('skip', test.id(), reason))


class Runner(unittest.TextTestRunner):
    resultclass = Result


base.RDMATestCase._get_ip_mac = get_ip_mac
parser.parse_args()
dev = parser.get_config()['dev']
res = unittest.main(module=tests, testRunner=Runner, exit=False).result
with open(results, 'w') as f:
    for outcome, test_id, reason in res.outcomes:
        f.write('{} {} {}\n'.format(outcome, test_id, reason).rstrip() + '\n')
n = {k: sum(1 for o in res.outcomes if o[0] == k)
     for k in ('pass', 'fail', 'error', 'skip')}
print('pyverbs {}: ran {}, passed {}, failed {}, errors {}, skipped {}'
      .format(dev, res.testsRun, n['pass'], n['fail'], n['error'], n['skip']),
      flush=True)
sys.exit(0 if res.wasSuccessful() else 1)

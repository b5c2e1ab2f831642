"""Teardown logic with `run` and process handling mocked: no root needed."""

import subprocess
from types import SimpleNamespace

import pytest

from tcpsim.capture import netns


class FakeRun:
    def __init__(self, fail_on=()):
        self.calls, self.fail_on = [], fail_on

    def __call__(self, cmd, check=True):
        self.calls.append(list(cmd))
        bad = any(word in cmd for word in self.fail_on)
        if bad and check:
            raise RuntimeError(f"{cmd} failed")
        return SimpleNamespace(returncode=1 if bad else 0, stdout="", stderr="boom" if bad else "")


def test_namespaces_and_addresses():
    plain = netns.Topology(tag="t")
    assert plain.namespaces == ["tcs-snd-t", "tcs-rcv-t"] and not plain.routed
    routed = netns.Topology(tag="t", delay_ns=10)
    assert routed.namespaces == ["tcs-snd-t", "tcs-rtr-t", "tcs-rcv-t"]
    assert routed.rcv_addr == "10.77.2.2" and routed.delay_ba == 10
    assert netns.Topology(tag="t", loss=0.1).routed
    assert netns.Topology(tag="t", delay_ns=5, delay_ba_ns=0).delay_ba == 0


def test_teardown_deletes_every_namespace_and_reports_errors(monkeypatch):
    fake = FakeRun(fail_on=("tcs-rtr-t",))
    monkeypatch.setattr(netns, "run", fake)
    errors = netns.teardown(netns.Topology(tag="t", delay_ns=1))
    deleted = [c[-1] for c in fake.calls if c[:3] == ["ip", "netns", "del"]]
    assert deleted == ["tcs-rcv-t", "tcs-rtr-t", "tcs-snd-t"]
    assert len(errors) == 1 and "tcs-rtr-t" in errors[0]


def test_topology_tears_down_when_build_fails(monkeypatch):
    fake = FakeRun(fail_on=("veth",))
    monkeypatch.setattr(netns, "run", fake)
    with pytest.raises(RuntimeError):
        with netns.topology(tag="x"):
            pass
    assert ["ip", "netns", "del", "tcs-snd-x"] in fake.calls
    assert ["ip", "netns", "del", "tcs-rcv-x"] in fake.calls


def test_topology_tears_down_on_exception_in_body(monkeypatch):
    fake = FakeRun()
    monkeypatch.setattr(netns, "run", fake)
    with pytest.raises(ZeroDivisionError):
        with netns.topology(tag="y"):
            1 / 0
    assert ["ip", "netns", "del", "tcs-rcv-y"] in fake.calls


def test_stop_procs_escalates_to_sigkill(monkeypatch):
    signals = []
    monkeypatch.setattr(netns.os, "killpg", lambda pid, sig: signals.append((pid, sig)))

    class Stubborn:
        pid = 4242
        waited = 0

        def poll(self):
            return None

        def wait(self, timeout=None):
            self.waited += 1
            if timeout is not None:
                raise subprocess.TimeoutExpired("x", timeout)
            return -9

    procs = [Stubborn()]
    netns.stop_procs(procs, timeout=0.01)
    assert [s for _, s in signals] == [netns.signal.SIGTERM, netns.signal.SIGKILL]
    assert procs == []


def test_netns_available_is_false_for_non_root(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.netns_available() is False

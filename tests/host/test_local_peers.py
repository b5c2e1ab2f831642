"""`peers = "local"`: both ends of every connection are the host's sockets (loopback), so the
peers' send queues charge the host's pool too -- as on the real kernel of the host captures."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tcpsim.errors import ScenarioError
from tcpsim.host.run import run_host
from tcpsim.host.scenario import host_from_dict, load_host

STUCK = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "stuck-40.toml"


def _run(peers: str, engine: str):
    host = replace(load_host(STUCK), peers=peers, duration=300_000_000)
    return run_host(host, engine=engine, timing="exact")


@pytest.mark.parametrize("engine", ["python", "native"])
def test_local_peers_charge_the_hosts_pool(engine):
    remote, local = _run("remote", engine), _run("local", engine)
    assert local.pressure["peak_sockstat_mem"] > remote.pressure["peak_sockstat_mem"]
    assert local.pressure["peak_inuse"] == 2 * remote.pressure["peak_inuse"] == 80


def test_both_engines_agree_with_local_peers():
    py, nat = _run("local", "python"), _run("local", "native")
    assert [tuple(s) for s in py.samples] == [tuple(s) for s in nat.samples]
    assert py.nstat == nat.nstat


def test_peers_must_be_remote_or_local():
    with pytest.raises(ScenarioError, match='peers: expected "remote"'):
        host_from_dict({"peers": "lan", "class": {"a": {"base": "seed-never-reads",
                                                         "count": 1}}})


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_bulk_writer_over_local_loopback_writes_a_round_trip_apart(engine):
    """Loopback delivers within the send(): each 1448-byte write is received and acknowledged
    before the next, so the never-read receivers coalesce what they get into two skbs and
    take 26 segments each before the pool stops them (the kernel's stuck-40 runs: 23-42);
    written all at once, the send queues took the pool first and the receivers got 10."""
    local = _run("local", engine)
    assert {f.received for f in local.flows} == {26 * 1448}
    remote = _run("remote", engine)            # a remote peer's writer is not held back
    assert all(f.written > f.received for f in remote.flows)


def test_the_hosts_sysctls_are_the_local_peers_too():
    """One namespace, one set of sysctls: with local peers the host's [sysctl] reaches the
    senders' sockets as well (over the base's [sender.sysctl]); remote peers keep their own."""
    doc = {"sysctl": {"net.ipv4.tcp_wmem": [4096, 16384, 65536]},
           "class": {"a": {"base": "seed-never-reads", "count": 1}}}
    local = host_from_dict({**doc, "peers": "local"}).classes[0].doc
    remote = host_from_dict(doc).classes[0].doc
    assert local["sender"]["sysctl"]["net.ipv4.tcp_wmem"] == [4096, 16384, 65536]
    assert "net.ipv4.tcp_wmem" not in remote.get("sender", {}).get("sysctl", {})
    assert local["sysctl"]["net.ipv4.tcp_wmem"] == remote["sysctl"]["net.ipv4.tcp_wmem"]

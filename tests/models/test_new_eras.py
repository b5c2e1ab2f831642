"""The eras after 6.18: each change against the era before it (models/linux_6_18_0.py,
linux_6_19.py, linux_7_0.py, linux_7_1.py). Every test here fails on the previous era.
"""

from __future__ import annotations

import pytest

import tcpsim
from tcpsim.catalog import get_profile
from tcpsim.core.segment import ACK, FIN, PSH
from tcpsim.core.skb import Skb
from tcpsim.core.sysctl import SysctlError
from tcpsim.engines import native_available

from harness import established


# -- 6.18.0 .. 6.18.16 and the 026dfef287c0 revert (6.18.17, 6.19.7, 7.0) ---------------

def test_6_18_0_admits_rmem_plus_len_and_6_18_only_rmem():
    skb = Skb(1, 1000, 2280, head=0, linear=0, nfrags=0)
    for prof, fits in (("linux-6.17", False), ("linux-6.18.0", False), ("linux-6.18", True)):
        sk = established(prof).sk
        sk.mem.sk_rcvbuf, sk.mem.sk_rmem_alloc = 10_000, 9_500
        assert sk.k.can_ingest(sk, skb) is fits, prof
        sk.mem.sk_rmem_alloc = 8_500          # room for the payload, not for its truesize
        assert sk.k.can_ingest(sk, skb) is (prof != "linux-6.17"), prof


@pytest.mark.parametrize("engine", [
    "python", pytest.param("native", marks=pytest.mark.skipif(not native_available(),
                                                              reason="tcpsim._native not built"))])
def test_rpc_over_loopback_drops_on_no_era_and_grows_rcvbuf_per_era(engine):
    """80 kB RPCs over loopback (MTU 65536) read every 3 ms, with the skbs lo carries (one GSO
    skb per transmission; measured on 6.18.44: 65483 + 14517 B per RPC, no TCPRcvQDrop,
    sk_rcvbuf 0.75 MB at 0.2 s, 6.5 MB by 1.2 s). DRS grows sk_rcvbuf from the first reads
    and the window tracks it (scaling_ratio ~ len/truesize for 64 KB skbs), so an in-window
    skb always fits: no era drops (before, MSS-sized clones kept 6.17's and 6.18.0's buffer
    small and they dropped 3 and 1). What tells the eras apart is how far the buffer grows:
    6.17 without the growth term, 6.18.x with it (aa251c84636c), 6.19 damped at a low RTT."""
    runs = {p: tcpsim.run("rpc-loopback", profile=p, engine=engine, trace=False)
            for p in ("linux-6.17", "linux-6.18.0", "linux-6.18", "linux-6.19", "linux-7.1")}
    assert all(r.counters["TcpExtTCPRcvQDrop"] == 0 for r in runs.values())
    assert all(r.summary["goodput_mbps"] == 639.36 for r in runs.values())
    rcvbuf = {p: r.summary["peak_sk_rcvbuf"] for p, r in runs.items()}
    assert rcvbuf["linux-6.17"] < rcvbuf["linux-6.18.0"] / 4
    assert rcvbuf["linux-6.18.0"] == rcvbuf["linux-6.18"] > 4_000_000
    assert rcvbuf["linux-6.19"] == rcvbuf["linux-7.1"] < rcvbuf["linux-6.18"] / 4


@pytest.mark.parametrize("engine", [
    "python", pytest.param("native", marks=pytest.mark.skipif(not native_available(),
                                                              reason="tcpsim._native not built"))])
def test_small_rpcs_read_in_big_batches_drop_before_the_revert_and_not_after(engine):
    """16 kB RPCs every 1 ms over loopback (MTU 65536), read in 1 MiB batches every 30 ms:
    between reads the queue nears sk_rcvbuf and an skb the window allowed no longer passes
    tcp_can_ingest() -- 6.17 (truesize) drops 1 and halves goodput, 6.18.0 (skb->len) drops
    3, none once the revert is in (026dfef287c0). One workload of 40 (16-80 kB every 1 ms,
    64 KiB or 1 MiB reads every 1-30 ms) where 6.18.0 drops; 6.17 drops in 5 of them
    (docs/since-6-18.md). Measured on 6.18.44 (the revert): no TCPRcvQDrop, all read."""
    raw = {"name": "rpc16", "duration": "2s", "link": {"rtt": "50us", "mtu": 65536},
           "receiver": {"device": "loopback"},
           "writer": {"kind": "periodic", "bytes": 16000, "every": "1ms", "latency": "none"},
           "reader": {"kind": "periodic", "bytes": 1048576, "every": "30ms", "latency": "none"}}
    runs = {p: tcpsim.run(raw, profile=p, engine=engine, trace=False)
            for p in ("linux-6.14", "linux-6.17", "linux-6.18.0", "linux-6.18", "linux-7.1")}
    drops = {p: r.counters["TcpExtTCPRcvQDrop"] for p, r in runs.items()}
    assert drops == {"linux-6.14": 0, "linux-6.17": 1, "linux-6.18.0": 3, "linux-6.18": 0,
                     "linux-7.1": 0}
    assert runs["linux-6.17"].summary["goodput_mbps"] < 0.6 * runs["linux-6.18"].summary[
        "goodput_mbps"]


# -- 6.19 ----------------------------------------------------------------------------------

def _grow_term(profile: str, rtt_us: int, **sysctl) -> int:
    p = established(profile, sysctl=sysctl)
    p.sk.rcv.rcv_rtt_us8 = rtt_us << 3
    return p.sk.k.rcvbuf_grow_term(p.sk, 3000, 1000)


def test_6_19_damps_drs_growth_below_tcp_rcvbuf_low_rtt():
    # rcvwin = 6000; 6.18: 2 * 6000 * 2000 / 1000 whatever the RTT
    assert _grow_term("linux-6.18", 100) == _grow_term("linux-6.18", 5000) == 24000
    assert _grow_term("linux-6.19", 100) == 6000 * 100 // 1000          # low RTT: damped
    assert _grow_term("linux-6.19", 5000) == 24000                       # WAN: slow start
    assert _grow_term("linux-6.19", 100, **{"net.ipv4.tcp_rcvbuf_low_rtt": 50}) == 24000


def test_6_19_keeps_a_data_centre_flows_buffer_smaller():
    """2 Gbit/s of 256 KiB writes over a 100 us, 10 Gbit/s path to a fast reader: 6.19's
    damped growth leaves sk_rcvbuf at a quarter of 6.18's, for the same goodput."""
    sc = {"name": "dc", "duration": "1s", "link": {"rtt": "100us", "rate": "10gbit"},
          "writer": {"kind": "periodic", "bytes": 262144, "every": "1ms", "latency": "none"},
          "reader": {"kind": "fast"}}
    runs = {prof: tcpsim.run(sc, profile=prof, trace=False).summary
            for prof in ("linux-6.18", "linux-6.19")}
    assert runs["linux-6.19"]["peak_sk_rcvbuf"] < runs["linux-6.18"]["peak_sk_rcvbuf"] / 3
    assert runs["linux-6.19"]["goodput_mbps"] == runs["linux-6.18"]["goodput_mbps"]


def _comp_delay(profile: str, rtt_ms: float, **sysctl) -> int:
    p = established(profile, sysctl=sysctl)
    return p.sk.k.comp_sack_delay_ns(p.sk, int(rtt_ms * 1000) << 3)


def test_6_19_sack_compression_waits_tcp_comp_sack_rtt_percent():
    assert _comp_delay("linux-6.18", 1) == 50_000                  # 5 % of 1 ms
    assert _comp_delay("linux-6.19", 1) == 330_000                 # 33 %
    assert _comp_delay("linux-6.19", 10) == _comp_delay("linux-6.18", 30) == 1_000_000  # cap
    assert _comp_delay("linux-6.19", 1, **{"net.ipv4.tcp_comp_sack_rtt_percent": 5}) == 50_000


@pytest.mark.parametrize("name,value", [("net.ipv4.tcp_rcvbuf_low_rtt", 5),
                                        ("net.ipv4.tcp_comp_sack_rtt_percent", 50),
                                        ("net.core.bypass_prot_mem", 1)])
def test_6_19_sysctls_exist_from_6_19_on(name, value):
    new = get_profile("linux-6.19")
    assert new.default_sysctls().with_overrides({name: value}, known=new.known_sysctls(),
                                                 profile="linux-6.19").as_dict()[name] == value
    old = get_profile("linux-6.18")
    with pytest.raises(SysctlError, match="does not exist on linux-6.18; it arrived in 6.19"):
        old.default_sysctls().with_overrides({name: value}, known=old.known_sysctls(),
                                             profile="linux-6.18")


def test_6_19_sysctl_ranges_are_the_kernels():
    prof = get_profile("linux-6.19")
    with pytest.raises(SysctlError, match="the kernel accepts 1..1000"):
        prof.default_sysctls().with_overrides({"net.ipv4.tcp_comp_sack_rtt_percent": 0},
                                              known=prof.known_sysctls())


def test_6_19_bypass_prot_mem_flags_new_sockets():
    """Only the flag: the host's memory pool is another model's (see linux_6_19.py)."""
    on = established("linux-6.19", sysctl={"net.core.bypass_prot_mem": 1}).sk
    assert on.mem.sk_bypass_prot_mem
    assert not established("linux-6.19").sk.mem.sk_bypass_prot_mem
    assert not established("linux-6.18").sk.mem.sk_bypass_prot_mem


# -- 7.1: RFC 7323 retraction ----------------------------------------------------------

def _retracted(profile: str, patches: tuple = ()):
    """tcp_shrink_window=1: a first ACK offers ~66 KiB (wscale 10), then SO_RCVBUF = 2500
    makes the next ACK retract the window to 1 KiB. Returns (peer, live right edge, largest
    right edge advertised)."""
    p = established(profile, sysctl={"net.ipv4.tcp_shrink_window": 1}, patches=patches)
    sk = p.sk
    p.at(2).send(1000)
    first_edge = sk.rcv.rcv_wup + sk.rcv.rcv_wnd
    sk.set_rcvbuf(2500)
    p.at(3).send(1000)
    p.at(50).tick()
    live = sk.rcv.rcv_wup + sk.rcv.rcv_wnd
    assert live < first_edge and sk.receive_window() > 0
    return p, live, first_edge


def test_7_1_accepts_data_inside_the_retracted_window():
    p, live, first_edge = _retracted("linux-7.1")
    sk = p.sk
    assert sk.rcv.rcv_mwnd_seq == first_edge
    n = live - sk.rcv.rcv_nxt + 500                     # ends beyond the live edge only
    p.at(60).send(n)
    assert sk.rcv.rcv_nxt == live + 500 and sk.mib.BeyondWindow == 0


def test_6_18_with_tcp_shrink_window_drops_it_as_beyond_window():
    p, live, _ = _retracted("linux-6.18")
    sk = p.sk
    nxt = sk.rcv.rcv_nxt
    p.at(60).send(live - nxt + 500)
    assert sk.rcv.rcv_nxt == nxt and sk.mib.BeyondWindow == 1
    assert sk.rcv.rcv_mwnd_seq == 0                     # not tracked before 7.1


def test_7_1_still_drops_beyond_the_largest_window():
    p, _, first_edge = _retracted("linux-7.1")
    sk = p.sk
    nxt = sk.rcv.rcv_nxt
    p.at(60).send(first_edge - nxt + 1)
    assert sk.rcv.rcv_nxt == nxt and sk.mib.BeyondWindow == 1


def test_7_1_and_the_retraction_patch_differ_on_the_fin_allowance():
    """Data ending exactly at the largest edge with a FIN one byte beyond, into a non-empty
    queue: 7.1 checks the FIN against the live window (TCP_INVALID_END_SEQUENCE); the posted
    series (--policy rfc7323-retraction) against the largest one (accepted)."""
    got = {}
    for prof, patches in (("linux-7.1", ()), ("linux-7.0", ("rfc7323-retraction",))):
        p, _, first_edge = _retracted(prof, patches)
        sk = p.sk
        nxt = sk.rcv.rcv_nxt
        p.at(60).send(first_edge - nxt, flags=ACK | PSH | FIN)
        got[prof] = (sk.rcv.rcv_nxt > nxt, sk.mib.BeyondWindow)
    assert got == {"linux-7.1": (False, 1), "linux-7.0": (True, 0)}


def test_the_retraction_patch_keeps_its_edge_in_the_socket():
    """The posted series' rcv_mwnd_seq lives in the socket's state, as 7.1's does: one
    policy object may serve many sockets (a host's class shares one on the native engine),
    and another socket's largest edge must not widen this one's."""
    p, _, first_edge = _retracted("linux-7.0", ("rfc7323-retraction",))
    assert p.sk.rcv.rcv_mwnd_seq == first_edge
    other = established("linux-7.0").sk
    own = other.rcv.rcv_wup + other.rcv.rcv_wnd - other.rcv.rcv_nxt
    assert p.sk.k.sequence_window(other) == own < first_edge - other.rcv.rcv_nxt


def test_7_1_counts_overwindow_drops_as_beyond_window():
    for prof, counted in (("linux-7.0", 0), ("linux-7.1", 1)):
        sk = established(prof).sk
        sk.k.overwindow_drop(sk)
        assert sk.mib.BeyondWindow == counted

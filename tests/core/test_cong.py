"""Congestion control (tcpsim/core/cong): CUBIC with HyStart and Reno, selected by
net.ipv4.tcp_congestion_control; the sender's sysctls."""

from __future__ import annotations

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.cong import CA_EVENT_TX_START, TCP_CA_LOSS, ca_ops
from tcpsim.core.cong.cubic import CUBE_FACTOR, CUBIC, cubic_root
from tcpsim.core.cong.reno import RENO
from tcpsim.core.constants import NS_PER_MS, NS_PER_S
from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.core.sysctl import SysctlError
from tcpsim.engine.simulation import Simulation
from tcpsim.errors import ScenarioError
from tcpsim.scenario import scenario_from_dict, set_field


def sender(profile="linux-6.18", hz=0, **sysctl):
    prof = get_profile(profile)
    s = prof.default_sysctls().with_overrides({f"net.ipv4.{k}": v for k, v in sysctl.items()})
    sk = TcpSocket(prof.policy(), s, name="snd", hz=hz)
    sk.connect(0)
    sk.take_outbox()
    sk.on_segment(NS_PER_MS, Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7,
                                     sack_ok=True, tsval=1, tsecr=1))
    sk.take_outbox()
    return sk


def icbrt(a: int) -> int:
    x = round(a ** (1 / 3))
    while x ** 3 > a:
        x -= 1
    while (x + 1) ** 3 <= a:
        x += 1
    return x


# -- selection ---------------------------------------------------------------------------------

def test_cubic_is_the_default_and_reno_is_selectable():
    assert sender().ca is CUBIC
    assert sender(tcp_congestion_control="reno").ca is RENO
    assert ca_ops("reno") is RENO


def test_an_unknown_algorithm_is_refused_with_the_choices():
    prof = get_profile("linux-6.18")
    with pytest.raises(SysctlError, match="'bbr' is not available; choose one of: cubic, reno"):
        prof.default_sysctls().with_overrides({"net.ipv4.tcp_congestion_control": "bbr"})


# -- the cube root and the curve ------------------------------------------------------------

@pytest.mark.parametrize("a", [0, 1, 7, 8, 27, 63, 64, 1000, 12345, 10**6, 2**30 + 1,
                               CUBE_FACTOR * 30, CUBE_FACTOR * 1000, 2**62])
def test_cubic_root_is_the_kernels_table_and_newton_step(a):
    # the table below 64, one Newton step above: exact to within the kernel's ~0.2 % (and one
    # unit for the small table values)
    exact = icbrt(a)
    assert abs(cubic_root(a) - exact) <= max(1, exact // 200), (a, cubic_root(a), exact)
    assert cubic_root(27) == 3 and cubic_root(10**6) == 100


def test_after_a_loss_cwnd_follows_the_cubic_curve_back_to_w_max():
    # W_max = 100, cut to 70: K = cbrt((W_max - cwnd) / C) s = cbrt(30 / 0.4) = 4.22 s;
    # the target is W_max at t = K (cnt = cwnd: one segment per RTT, the plateau) and
    # below it before (concave: cnt small far from W_max, growing towards it)
    sk = sender()
    snd = sk.snd
    snd.snd_cwnd = 100
    assert CUBIC.ssthresh(sk) == 70 and snd.ca_last_max_cwnd == 100
    snd.snd_cwnd = snd.snd_ssthresh = 70
    snd.ca_delay_min = 0
    CUBIC.update(sk, 70, 1)                                  # the epoch starts now
    assert snd.ca_origin_point == 100
    assert abs(snd.ca_k - 4.217 * 1024) < 0.01 * 4.217 * 1024
    early = snd.ca_cnt
    sk.now += 4217 * NS_PER_MS                               # t = K
    snd.ca_last_cwnd = 0
    CUBIC.update(sk, 99, 1)
    assert snd.ca_cnt == 99                                   # target W_max: 99 / (100 - 99)
    assert early < 99
    sk.now += 3 * NS_PER_S                                    # past K: convex, faster again
    CUBIC.update(sk, 101, 1)
    assert snd.ca_cnt < 50


def test_fast_convergence_lowers_w_max_when_a_loss_comes_below_the_last_one():
    sk = sender()
    snd = sk.snd
    snd.snd_cwnd = 100
    CUBIC.ssthresh(sk)
    snd.snd_cwnd = 80                                         # lost again below W_max = 100
    assert CUBIC.ssthresh(sk) == 80 * 717 // 1024
    assert snd.ca_last_max_cwnd == 80 * (1024 + 717) // 2048  # 68, not 80
    snd.snd_cwnd = 90                                         # above: W_max is the cwnd
    CUBIC.ssthresh(sk)
    assert snd.ca_last_max_cwnd == 90


def test_entering_loss_forgets_the_curve_and_restarts_hystart():
    sk = sender()
    snd = sk.snd
    snd.ca_last_max_cwnd, snd.ca_found, snd.ca_epoch_start, snd.ca_delay_min = 100, True, 5, 20
    CUBIC.set_state(sk, TCP_CA_LOSS)
    assert (snd.ca_last_max_cwnd, snd.ca_found, snd.ca_epoch_start, snd.ca_delay_min) == (0, False, 0, 0)
    assert snd.ca_curr_rtt == 0xFFFFFFFF and snd.ca_end_seq == snd.snd_nxt


def test_tx_start_after_idle_shifts_the_epoch_by_the_idle_time():
    sk = sender(hz=1000)
    snd = sk.snd
    sk.ack.lsndtime = 100 * NS_PER_MS
    snd.ca_epoch_start = 50                                   # jiffies
    sk.now = 400 * NS_PER_MS
    CUBIC.cwnd_event(sk, CA_EVENT_TX_START)
    assert snd.ca_epoch_start == 350                           # + 300 idle jiffies
    sk.ack.lsndtime = 0
    CUBIC.cwnd_event(sk, CA_EVENT_TX_START)
    assert snd.ca_epoch_start == 400                           # never beyond now


# -- HyStart -----------------------------------------------------------------------------------

def bulk(rate: str, cc: str, duration: str = "1500ms") -> Simulation:
    sc = scenario_from_dict({
        "profile": "linux-6.18", "duration": duration,
        "link": {"rtt": "20ms", "rate": rate, "queue_limit": 1000},
        "writer": {"kind": "bulk", "bytes": 65536}, "reader": {"kind": "fast"},
        "sysctl": {"net.ipv4.tcp_rmem": "4096 131072 33554432"},
        "sender": {"sysctl": {"net.ipv4.tcp_wmem": "4096 16384 33554432",
                              "net.ipv4.tcp_congestion_control": cc}}})
    sim = Simulation(sc, get_profile("linux-6.18"))
    sim.run()
    return sim


def test_hystart_leaves_slow_start_on_the_delay_a_queue_adds():
    # 4 Mbit/s, 20 ms: ACKs come too far apart for an ACK train, but the queue behind the
    # bottleneck raises the RTT by more than max(delay_min / 8, 4 ms): slow start ends near
    # the path's BDP (7 segments) plus the queue it took to notice -- not at a loss
    snd = bulk("4mbit", "cubic").snd.snd
    assert snd.ca_found and snd.snd_ssthresh < 40
    assert snd.ca_curr_rtt > snd.ca_delay_min + max(snd.ca_delay_min >> 3, 4000)
    reno = bulk("4mbit", "reno").snd
    assert reno.snd.snd_ssthresh > 1000 or reno.mib.TCPRetransSegs   # Reno fills the queue


def test_hystart_ack_train_ends_slow_start_near_the_bdp():
    # 20 Mbit/s, 20 ms (BDP 34 segments): a continuous ACK train longer than delay_min / 2
    # says a window's worth has been acknowledged in one go
    snd = bulk("20mbit", "cubic", "500ms").snd.snd
    assert snd.ca_found and 30 <= snd.snd_ssthresh <= 60
    assert snd.ca_curr_rtt <= snd.ca_delay_min + 4000          # not the delay test


def test_hystart_eras():
    sk = sender("linux-5.15")
    sk.snd.pacing_rate = 1_000_000_000                         # 1 GB/s
    assert sk.k.hystart_ack_delay(sk) == 65536 * 4 // 1000      # GSO_MAX_SIZE: 262 us
    six = sender("linux-6.1")
    six.snd.pacing_rate = 1_000_000_000
    assert six.k.hystart_ack_delay(six) == (65536 - 193) * 4 // 1000   # sk_gso_max_size
    six.snd.pacing_rate = -1
    assert six.k.hystart_ack_delay(six) == 0
    assert not sk.k.hystart_round_reset_first(sk)
    assert sender("linux-6.14").k.hystart_round_reset_first(sk)


def test_since_614_hystart_rounds_are_tracked_below_the_low_window():
    for profile, tracked in (("linux-6.10", False), ("linux-6.14", True)):
        sk = sender(profile)
        sk.snd.snd_cwnd = 10
        sk.snd.snd_una = sk.snd.ca_end_seq + 1                  # the round is over
        sk.tcp_mstamp = 5000
        CUBIC.pkts_acked(sk, 20000)
        assert (sk.snd.ca_round_start == 5000) is tracked, profile


# -- sender sysctls ----------------------------------------------------------------------------

def test_slow_start_after_idle_restarts_cwnd_and_can_be_turned_off():
    for on in (1, 0):
        sk = sender(tcp_slow_start_after_idle=on)
        sk.snd.snd_cwnd, sk.snd.snd_ssthresh = 80, 20
        sk.ack.lsndtime = 10 * NS_PER_MS
        sk.write(10 * NS_PER_S, 1000)                          # ~50 RTOs of idle time
        assert sk.snd.snd_cwnd == (10 if on else 80)
        assert sk.snd.snd_ssthresh == (60 if on else 20)        # at least 3/4 of the cwnd


def test_notsent_lowat_limits_the_unsent_bytes_a_write_queues():
    sk = sender(tcp_notsent_lowat=10_000)
    sk.snd.snd_wnd = 0                                          # nothing can be sent
    n = sk.write(2 * NS_PER_MS, 1 << 20)
    assert 10_000 <= n < 10_000 + 65536 and not sk.can_queue()
    free = sender()
    free.snd.snd_wnd = 0
    assert free.write(2 * NS_PER_MS, 1 << 20) > n


def test_sender_sysctl_table_and_sweep_key():
    raw = {"writer": {"kind": "bulk"}, "reader": {"kind": "fast"}}
    set_field(raw, "sender.sysctl.net.ipv4.tcp_congestion_control", "reno")
    sc = scenario_from_dict(raw)
    assert sc.sender_sysctl == {"net.ipv4.tcp_congestion_control": "reno"}
    assert sc.as_dict()["sender_sysctl"] == {"net.ipv4.tcp_congestion_control": "reno"}
    assert "sender_sysctl" not in scenario_from_dict({}).as_dict()
    with pytest.raises(ScenarioError, match="^sender.sysctl: sysctl net.ipv4.tcp_wmem: expected"):
        scenario_from_dict({"sender": {"sysctl": {"net.ipv4.tcp_wmem": "a b"}}})
    with pytest.raises(ScenarioError, match="sender.sysctl: expected a table"):
        scenario_from_dict({"sender": {"sysctl": 3}})


def test_a_window_that_reopens_on_queued_data_after_idle_restarts_cwnd():
    """tcp_ack_update_window() runs tcp_slow_start_after_idle_check() when the window
    changes while unsent data is queued: the kernel's reproducer sender (cwnd 60) sent 10
    segments into a window reopened after a 69 s zero-window stall, not the whole window
    (issue 14, seed-unbounded-growth-shrink0-120s at 70.96 s)."""
    for on in (1, 0):
        sk = sender(tcp_slow_start_after_idle=on)
        sk.snd.snd_cwnd, sk.snd.snd_ssthresh = 60, 1 << 30
        sk.snd.snd_wnd = 0                                     # the peer's zero window
        sk.ack.lsndtime = 2 * NS_PER_MS
        sk.write(3 * NS_PER_MS, 200 * 1448)                    # queued, nothing sent
        assert not sk.take_outbox() and sk.snd.snd_cwnd == 60
        sk.on_segment(70 * NS_PER_S, Segment(1, 0, ACK, 1, 49152 >> 7, tsval=2, tsecr=1))
        sent = [s for s in sk.take_outbox() if s.len]
        assert sk.snd.snd_cwnd == (10 if on else 60)
        assert sum(s.len for s in sent) == (10 * 1448 if on else 49152)   # all of it

"""The model against numbers measured on the development kernel (docs/kernel-measurements.md).

Each test names the experiment it holds the model to. These are exact matches where the
kernel is deterministic for the workload; tolerances are stated where it is not.
"""

import pytest

import tcpsim
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import scenario_from_dict

from harness import established


def fill(so_rcvbuf: int = 0) -> dict:
    raw = {"name": "e2", "profile": "linux-6.18", "duration": "1s",
           "sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, 33554432],
                      "net.core.rmem_max": 4194304},
           "link": {"rtt": "50us"}, "receiver": {"role": "client"},
           "writer": {"kind": "bulk"}, "reader": {"kind": "never"}}
    if so_rcvbuf:
        raw["receiver"]["so_rcvbuf"] = so_rcvbuf
    result, _ = run(scenario_from_dict(raw), RunOptions())
    return {**result.summary, **result.counters}


def test_e2_so_rcvbuf_32k_never_read_fill_is_exact():
    s = fill(32768)
    assert (s["bytes_received"], s["final_sk_rmem_alloc"], s["final_sk_rcvbuf"]) == (60816, 63312, 65536)
    assert (s["final_rcv_ssthresh"], s["final_window_clamp"], s["rcv_wscale"]) == (38196, 41472, 0)
    assert s["TcpExtTCPRcvCoalesce"] == 39 and s["TcpExtTCPToZeroWindowAdv"] == 1
    assert s["TcpExtTCPRcvQDrop"] == s["TcpExtPruneCalled"] == 0


def test_e2_default_never_read_fill_within_three_segments():
    s = fill()
    assert s["final_sk_rcvbuf"] == 131072 and s["rcv_wscale"] == 10
    assert (s["final_rcv_ssthresh"], s["final_window_clamp"]) == (77835, 82944)
    assert abs(s["bytes_received"] - 118160) <= 3 * 1448           # kernel: 118160
    assert s["final_sk_rmem_alloc"] <= s["final_sk_rcvbuf"]          # no overshoot
    assert s["TcpExtTCPToZeroWindowAdv"] == 1 and s["TcpExtPruneCalled"] == 0


@pytest.mark.parametrize("mib,ws,first_ack", [(6, 7, 502), (8, 8, 251), (32, 10, 63), (256, 13, 8)])
def test_e3_handshake_client(mib, ws, first_ack):
    p = established("linux-6.18", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, mib << 20],
                                          "net.core.rmem_max": 4194304})
    sk = p.sk
    assert sk.conn.rcv_wscale == ws and sk.rcv.rcv_ssthresh == 64088 == sk.rcv.window_clamp
    first = [r for r in sk.sink.rows if r[2] == "tx" and r[8] == "A"][0]
    assert first[10] == first_ack


def test_e6_rcv_ssthresh_growth_over_the_first_segments():
    # tcp_probe before segments 2..6: 67408, 70304, 73200, 76096, then capped at 77835
    p = established("linux-6.18", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 33554432],
                                          "net.core.rmem_max": 4194304})
    seen = []
    for i in range(6):
        p.at(2 + i * 0.01).send(1448)
        seen.append(p.sk.rcv.rcv_ssthresh)
    assert seen == [67408, 70304, 73200, 76096, 77835, 77835]
    assert p.sk.rcv.scaling_ratio == 162 and p.sk.rcv.window_clamp == 82944


def _e7(device: object, duration: str = "300ms", trace: bool = False) -> tcpsim.Run:
    raw = {"name": "e7", "profile": "linux-6.18", "duration": duration,
           "timing": {"host": "exact"},
           "link": {"rtt": "40us", "mtu": 1500}, "receiver": {"device": device},
           "writer": {"kind": "periodic", "bytes": 20000, "every": "200us"},
           "reader": {"kind": "periodic", "bytes": 65536, "every": "1ms"}}
    return tcpsim.run(raw, trace=trace)


def test_e7_loopback_gso_reads_grow_rcvbuf_on_6_18():
    """E7: over lo (MTU 1500, TSO/GSO on) each transmission reaches the receiver as one GSO
    skb (Device.gso_whole), so a 64 KiB read copies whole 20000-B skbs and 6.16+'s DRS
    (bytes read minus bytes still queued) sees the reader drain the queue: the kernel grows
    sk_rcvbuf to 4145898 in one step within 100 ms (its one grow event: copied 123832, inq
    1696, rtt_us 625; a later run: 4333556, rcv_space 122136). The model's first grow sees
    copied 122136, inq 1696, rtt 600 us and lands on 4333556; held to 10 % of 4145898.
    MSS-sized skbs kept it at 131072."""
    early = _e7("loopback", "100ms")
    assert abs(early.summary["peak_sk_rcvbuf"] - 4145898) <= 0.10 * 4145898
    result = _e7("loopback", "3s", trace=True)
    assert abs(result.summary["peak_sk_rcvbuf"] - 4145898) <= 0.10 * 4145898
    t = result.trace.to_pydict()
    rx = [n for n, sock, ev in zip(t["len"], t["sock"], t["event"]) if (sock, ev) == ("rcv", "rx")]
    # the kernel's first skbs: 7240, 7240, 5520, 17376, 2624, then one 20000-B skb per write
    assert rx[:5] == [7240, 7240, 5520, 17376, 2624]
    # and over 3 s (tcp:tcp_probe): 1866 of 2754 skbs were 60-64 KB, 594 were 16-20 KB (the
    # model: 2734 and 642 of 3786); each share held to 0.1
    assert abs(sum(60000 <= n <= 65536 for n in rx) / len(rx) - 1866 / 2754) <= 0.1
    assert abs(sum(16000 <= n <= 20000 for n in rx) / len(rx) - 594 / 2754) <= 0.1
    # one ACK decision and one header-prediction test per skb (a fourth run, with nstat):
    # 1309 pure ACKs at the sender (the model: 1273), TCPHPHits 5 (64 KB skbs outgrow
    # sk_forward_alloc and take the slow path; the model: 5), 3895 data skbs (3787)
    assert abs(result.sender_counters["TcpExtTCPPureAcks"] - 1309) <= 0.1 * 1309
    assert result.counters["TcpExtTCPHPHits"] <= 10
    assert abs(len(rx) - 3895) <= 0.1 * 3895

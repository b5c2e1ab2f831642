"""Data both ways: a writer and a reader at each end, each end with its own ingress device.

Both sockets run the full receive path (the sender end is a TcpSocket too); the trace's
`sock` column and the summary's `rev_` fields say which direction a figure belongs to."""

from dataclasses import replace
from unittest.mock import ANY

import pytest

from tcpsim.core.state import ESTABLISHED
from tcpsim.engine.simulation import Connection, Simulation
from tcpsim.catalog import get_profile
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import ScenarioError, load_scenario, scenario_from_dict
from tcpsim.trace.recorder import MemoryRecorder
from tcpsim.workload import App

from exact import exact

REQUEST_RESPONSE = {
    "name": "rr", "profile": "linux-6.18", "duration": "300ms", "link": {"rtt": "2ms"},
    # client -> server: 200-byte requests every 5 ms; server -> client: 30 KiB responses
    "receiver": {"role": "server", "device": "nic-2k",
                 "writer": {"kind": "periodic", "bytes": "30K", "every": "5ms", "start": "1ms"}},
    "sender": {"device": {"preset": "veth"}, "reader": {"kind": "fast"}},
    "writer": {"kind": "periodic", "bytes": 200, "every": "5ms"},
    "reader": {"kind": "periodic", "bytes": "16K", "every": "1ms"},
}


class CheckedConnection(Connection):
    """After every event, the receive-side invariants of the state machine
    (tests/core/test_receiver_state_machine.py: check_byte_stream, check_receive_queue, the
    memory identity and the never-retreating window edge) for *both* sockets."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.prev = {}
        self.checks = 0

    def after(self, sk):
        super().after(sk)
        for s in (self.rcv, self.snd):
            self.check(s)

    def check(self, sk):
        if sk.conn.state is not ESTABLISHED:
            return
        r, m = sk.rcv, sk.mem
        where = f"{sk.name}: rcv_nxt={r.rcv_nxt} copied={r.copied_seq} rmem={m.sk_rmem_alloc}"
        assert r.copied_seq <= r.rcv_nxt, where
        q = list(m.receive_queue)
        if q:
            assert q[0].seq <= r.copied_seq < q[0].end_seq or r.copied_seq == q[0].end_seq - 1, where
            assert q[-1].end_seq == r.rcv_nxt, where
        else:
            assert r.copied_seq == r.rcv_nxt, where
        charged = sum(s.truesize for s in q) + sum(s.truesize for s in m.ofo_queue)
        assert m.sk_rmem_alloc == charged, f"{where} queues hold {charged}"
        assert sk.recv_q() == r.rcv_nxt - r.copied_seq, where
        edge = r.rcv_wup + r.rcv_wnd
        drops = sk.mib.TCPRcvQDrop
        p = self.prev.get(sk.name)
        if p is not None:
            # The one retreat of the right edge: an in-order segment dropped for memory asks
            # for a zero window at rcv_nxt whatever tcp_shrink_window says (the NOMEM branch
            # of tcp_select_window [tcp_output.c, 6.6+], stored from 6.14), as a 6.18 kernel
            # does on the wire (scripts/window_edge_capture.py, docs/ntb-jumbo-rx.md).
            nomem = drops > p[4] and r.rcv_wnd == 0 and r.rcv_wup == r.rcv_nxt
            for i, (name, v) in enumerate((("rcv_nxt", r.rcv_nxt), ("copied_seq", r.copied_seq),
                                           ("bytes_received", r.bytes_received), ("edge", edge))):
                if name == "edge" and nomem:
                    continue
                assert v >= p[i], f"{where}: {name} went back from {p[i]} to {v}"
        self.prev[sk.name] = (r.rcv_nxt, r.copied_seq, r.bytes_received, edge, drops)
        self.checks += 1


class CheckedSimulation(Simulation):
    """A host whose connection checks its invariants after every event."""

    conn_class = CheckedConnection

    @property
    def checks(self):
        return self.conn.checks


def test_request_response_both_receive_paths_hold_the_invariants():
    sc = scenario_from_dict(exact(REQUEST_RESPONSE))   # on time: every byte read by the end
    sink = MemoryRecorder()
    sim = CheckedSimulation(sc, get_profile(sc.profile), sink=sink)
    s = sim.run().summary
    assert sim.checks > 1000
    # both directions carried their data and were read at the far end
    assert s["bytes_written"] == s["bytes_read"] > 0
    assert s["rev_bytes_written"] > 30 * 1024 * 50 and s["rev_bytes_read"] > 0
    assert s["rev_bytes_written"] - s["rev_bytes_read"] <= 30 * 1024 * 3   # a few still in flight
    # the trace says which end each row belongs to: both ends' receive paths are there
    cols = sink.columns()
    rx = {(sock, d) for sock, e, d in zip(cols["sock"], cols["event"], cols["detail"])
          if e == "rx" and d in ("queued", "coalesced")}
    assert {("rcv", "queued"), ("snd", "queued")} <= rx
    reads = {sock for sock, e in zip(cols["sock"], cols["event"]) if e == "read"}
    assert reads == {"rcv", "snd"}
    # each end's own device: nic-2k skbs at the receiver end, veth skbs at the sender end
    ts = {(sock, t) for sock, e, d, n, t in zip(cols["sock"], cols["event"], cols["detail"],
                                                  cols["len"], cols["truesize"])
          if e == "rx" and d == "queued" and n == 200}
    assert ("rcv", 2304) in ts
    assert all(t != 2304 for sock, t in ts if sock == "snd")


def test_one_way_scenarios_read_as_before():
    sc = scenario_from_dict({"name": "one"})
    assert not sc.two_way and "rev_writer" not in sc.as_dict() and "sender_device" not in sc.as_dict()
    r, _ = run(replace(sc, duration=50_000_000), RunOptions())
    assert not any(k.startswith("rev_") for k in r.summary)


def ntb_sim(copybreak: int = 0, duration: int = 200_000_000, mtu: int = 0, **changes):
    """The ntb experiment (at `mtu` when given), with rx_copybreak at both ends when given:
    the simulation after its run (its summary as .summary) and the trace's columns."""
    sc = load_scenario("experiments/ntb-jumbo-rx.toml")
    sc = replace(sc, duration=duration, **changes)
    if mtu:
        sc = replace(sc, link=replace(sc.link, mtu=mtu))
    if copybreak:
        sc = replace(sc, device=f"{sc.device},rx_copybreak={copybreak}",
                     sender_device=f"{sc.sender_device},rx_copybreak={copybreak}")
    sink = MemoryRecorder()
    sim = CheckedSimulation(sc, get_profile(sc.profile), sink=sink)
    sim.summary = sim.run().summary
    return sim, sink.columns()


def ntb(copybreak: int = 0, **changes):
    sim, cols = ntb_sim(copybreak, **changes)
    return sim.summary, cols


def test_ntb_every_frame_costs_a_128k_kmalloc_and_copybreak_right_sizes_small_ones():
    # ntb_netdev: netdev_alloc_skb(mtu + ETH_HLEN) = a 128 KiB kmalloc object per frame
    _, cols = ntb()
    small = {(sock, t) for sock, e, d, n, t in zip(cols["sock"], cols["event"], cols["detail"],
                                                     cols["len"], cols["truesize"])
             if e == "rx" and d == "queued" and n == 48}
    assert small == {("snd", 131328)}
    _, cols = ntb(256)
    small = {(sock, t) for sock, e, d, n, t in zip(cols["sock"], cols["event"], cols["detail"],
                                                     cols["len"], cols["truesize"])
             if e == "rx" and d == "queued" and n == 48}
    assert small == {("snd", 832)}           # copied into a small-head skb


@pytest.mark.parametrize("raw,msg", [
    ({"sender": {"reader": {"kind": "fast"}}}, "sender.reader: nothing flows to the sender end"),
    ({"receiver": {"writer": {"kind": "trickle"}}}, "receiver.writer.kind: expected one of"),
    ({"receiver": {"writer": {"kind": "bulk"}}, "sender": {"reader": {"kind": "periodic"}}},
     "sender.reader.bytes: required"),
    ({"sender": {"device": {"strategy": "kmalloc", "buf": 100}}}, "sender.device.buf: 100 bytes"),
    ({"receiver": {"writer": 3}}, "receiver.writer: expected a table"),
])
def test_two_way_errors_name_the_table(raw, msg):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict({"name": "x", **raw})
    assert str(err.value).startswith(msg), str(err.value)


# -- relay: one thread relaying both ways (ssh's forwarding loop) ---------------------------------

RELAY = {
    "name": "relay", "profile": "linux-6.18", "link": {"rtt": "1ms"},
    # the sender end streams; the receiver end reads nothing until 150 ms, and talks back
    "writer": {"kind": "bulk"},
    "reader": {"kind": "periodic", "bytes": "4M", "every": "1ms", "start": "150ms"},
    "receiver": {"writer": {"kind": "periodic", "bytes": 48, "every": "10ms"}},
    "sender": {"reader": {"kind": "relay"}},
}


def relay_run(duration: str, kind: str = "relay", skip: bool = True) -> dict:
    raw = {**RELAY, "duration": duration, "sender": {"reader": {"kind": kind}}}
    sc = scenario_from_dict(raw)
    return Simulation(sc, get_profile(sc.profile), skip=skip).run().summary


def test_a_relay_reader_does_not_read_while_its_writer_is_stuck_in_send():
    # the receiver end does not read: the bulk writer's send buffer fills and stays full, so
    # the relay at the sender end reads nothing more; a fast reader reads every message
    stuck = relay_run("140ms")
    assert stuck["bytes_read"] == 0 and stuck["rev_bytes_received"] == 48 * 14
    assert stuck["rev_bytes_read"] == 48 * 3            # what came while the buffer filled
    fast = relay_run("140ms", "fast")
    assert fast["rev_bytes_read"] == fast["rev_bytes_received"] == stuck["rev_bytes_received"]
    # once the receiver end reads, the writer's send() returns and the relay drains its socket
    freed = relay_run("300ms")
    assert freed["bytes_read"] > stuck["bytes_written"]
    assert freed["rev_bytes_read"] == freed["rev_bytes_received"] == 48 * 30


def test_a_relay_run_is_the_same_tick_by_tick():
    assert relay_run("200ms", skip=False) == {**relay_run("200ms"), "wall_s": ANY, "events": ANY}


def test_a_relay_reader_needs_a_writer_at_its_end():
    with pytest.raises(ScenarioError, match=r'^reader.kind: "relay" reads between the writes'):
        scenario_from_dict({"name": "x", "reader": {"kind": "relay"}})
    # the sender end always has one ([writer]): its relay needs only data back
    sc = scenario_from_dict({**RELAY, "duration": "10ms"})
    assert sc.rev_reader.kind == "relay"


def test_ntb_at_its_own_64k_mtu_the_copy_runs_in_the_model():
    # At ntb's own 64 KiB MTU the model's copy runs, with and without the copybreak, as the
    # 6.18 kernel's did on veth given near that charging (scripts/ntb_veth_capture.py:
    # ssh-shaped ends, default tcp_rmem, 0 of 3 runs stalled, 0.6-1.2 GiB in 4 s). The bulk
    # segments are half the 64 KiB MSS (tcp_sync_mss bounds it to half the peer's first
    # window), a quarter of the 128 KiB they are charged.
    plain, cols = ntb(mtu=65536)
    fixed, _ = ntb(256, mtu=65536)
    for s in (plain, fixed):
        assert s["zero_windows_sent"] == s["rev_zero_windows_sent"] == 0
        assert s["bytes_read"] > 50 << 20
        assert s["rev_bytes_written"] == 20 * 48                 # at 10, 20, ... 200 ms
        assert s["rev_bytes_written"] - s["rev_bytes_read"] <= 48   # the last one in flight
    # the copybreak changes only what a small message costs at the sender end
    assert (plain["rev_peak_sk_rmem_alloc"], fixed["rev_peak_sk_rmem_alloc"]) == (131328, 832)
    bulk = {(n, t) for sock, e, d, n, t in zip(cols["sock"], cols["event"], cols["detail"],
                                               cols["len"], cols["truesize"])
            if sock == "rcv" and e == "rx" and d == "queued"}
    assert bulk == {(32768, 131328)}


RMEM_128K = {"net.ipv4.tcp_rmem": (4096, 131072, 131072)}


@pytest.mark.parametrize("changes", [{"so_rcvbuf": 65536},
                                     {"sysctl": RMEM_128K, "sender_sysctl": RMEM_128K}],
                         ids=["so_rcvbuf", "tcp_rmem"])
def test_ntb_with_a_receive_buffer_that_cannot_grow_stalls_with_or_without_copybreak(changes):
    # A locked SO_RCVBUF (64 KiB -> 128 KiB) or a tcp_rmem[2] of 128 KiB is the condition
    # under which the kernel on veth stalls the copy (0-9 MiB in 4 s instead of 1.2 GiB),
    # with and without the copybreak (docs/ntb-jumbo-rx.md). In the model the bulk stops after
    # the first window: window_clamp = 131072 x 63/256 = 32256 (32768 bytes in 131328) is
    # under the 32748-byte MSS, and each ACK of the small messages re-arms the persist timer
    # before it fires -- as the kernel's stalled sender showed (ss -o: persist, lastack 4 ms).
    for copybreak in (0, 256):
        # the ends of the earlier experiment: readers woken at once
        s, cols = ntb(copybreak, mtu=65536, reader=App("fast"), **changes)
        assert s["bytes_read"] == 65496 < s["bytes_written"], copybreak
        assert s["window_probes"] == s["zero_windows_sent"] == 0
        last = max(i for i, sock in enumerate(cols["sock"]) if sock == "rcv"
                   and cols["event"][i] == "tx")
        assert (cols["window_clamp"][last], cols["scaling_ratio"][last]) == (32256, 63)
        assert cols["win_scaled"][last] == 32256 < 32748


def test_ntb_deadlocks_the_copy_and_the_copybreak_lets_it_run():
    # The experiment as shipped (MTU 11500, every frame charged ntb's 128 KiB; the 6.18
    # kernel on veth given exactly that charging: 7 of 8 runs stopped dead, 0 of 8 with
    # rx_copybreak = 256 -- docs/ntb-jumbo-rx.md).
    dur = 260_000_000
    stuck, cols = ntb_sim(duration=dur)
    s = stuck.summary
    # The copy stops after the first window: the first bulk segment (11448 bytes in 131328)
    # sets scaling_ratio 22, so rcv_ssthresh drops to 131072 x 22/256 = 11264, under the MSS.
    assert s["bytes_read"] == 57344 < s["bytes_written"]
    data = [t for t, sock, e, n in zip(cols["t_ns"], cols["sock"], cols["event"], cols["len"])
            if sock == "rcv" and e == "rx" and n > 0]
    assert max(data) < 2_000_000                       # no progress after the first 2 ms
    last = max(i for i, sock in enumerate(cols["sock"])
               if sock == "rcv" and cols["event"][i] == "tx")
    assert (cols["scaling_ratio"][last], cols["rcv_ssthresh"][last]) == (22, 11264)
    assert cols["win_scaled"][last] == 11264 < cols["rcv_mss"][last] == 11448
    # The persist timer is armed and never fires: every 48-byte message, charged 131328,
    # exceeds the sender end's sk_forward_alloc and takes the slow path, whose tcp_ack()
    # re-arms it from now (tcp_ack_probe); no probe, no window-sized slice.
    a = stuck.snd
    assert a.mib.TCPHPHits == 0 and s["window_probes"] == 0
    assert a.snd.probe_deadline > dur - 10_000_000 + a.probe0_base() - 1_000_000
    assert a.snd.snd_nxt == 57345 and a.snd.write_queue
    # Not a zero window: the receiver offers 11264 bytes, the sender will not send less
    # than an MSS; the kernel showed the same (no TCPToZeroWindowAdv, no TCPWinProbe).
    assert s["zero_windows_sent"] == s["rev_zero_windows_sent"] == 0
    # the other direction flows: every message is delivered and read (one may be in flight)
    assert s["rev_bytes_written"] == 26 * 48 and s["rev_bytes_read"] >= 25 * 48

    runs, cols = ntb_sim(256, duration=dur)
    s = runs.summary
    # Copied into an 832-byte skb, a message fits the part of a page the sender end's send
    # queue leaves in sk_forward_alloc: the fast path, no tcp_ack(), no re-arming.
    assert s["rev_peak_sk_rmem_alloc"] == 832 and runs.snd.mib.TCPHPHits > 0
    # The timer fires 200 ms into the stall and sends what the window takes; the window
    # grows from there (the receiver's buffer had grown: tcp_rcv_space_adjust, one sample).
    slices = [t for t, sock, e, n in zip(cols["t_ns"], cols["sock"], cols["event"], cols["len"])
              if sock == "snd" and e == "tx" and n == 11264]
    assert slices and 200_000_000 < slices[0] < 215_000_000
    assert s["bytes_read"] > 200 * 57344
    assert s["rev_bytes_written"] == 26 * 48 and s["rev_bytes_read"] >= 25 * 48


def receiver_acks(rows, cols_names):
    """(ack_seq, scaled window) of the receiver end's ACKs after its SYN, in order."""
    i = {n: k for k, n in enumerate(cols_names)}
    return [(r[i["ack_seq"]], r[i["win_scaled"]]) for r in rows
            if r[i["sock"]] == "rcv" and r[i["event"]] == "tx" and r[i["flags"]] != "S"]


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_memory_drop_moves_the_right_edge_back_as_the_kernel_does(engine):
    # The ntb experiment's receiver with a locked SO_RCVBUF of 64 KiB (rcvbuf 131072, window
    # scale 1) and a reader that comes late: the first bulk segment is charged 131328, more
    # than the buffer, so the next in-order one cannot be admitted (tcp_try_rmem_schedule:
    # rmem + len > rcvbuf, and pruning cannot collapse an skb whose len/truesize is the
    # scaling_ratio itself). It is dropped and the ACK advertises a zero window at rcv_nxt:
    # the right edge goes back from 57301 to 11449 under tcp_shrink_window = 0, because the
    # NOMEM branch of tcp_select_window() [tcp_output.c, 6.18] returns before the
    # never-shrink rule. A 6.18.44 kernel on veth given the same charging and SO_RCVBUF does
    # exactly that, figures and all (scripts/window_edge_capture.py, "nomem 11500 ... B
    # client": edge 57301 -> 11449, window 0).
    from tcpsim.trace.recorder import COLUMN_NAMES
    sc = replace(load_scenario("experiments/ntb-jumbo-rx.toml"), so_rcvbuf=65536)
    res, rec = run(sc, RunOptions(duration=5_000_000, engine=engine, memory_trace=True))
    acks = receiver_acks(rec.rows, COLUMN_NAMES)
    edges = [a + w for a, w in acks]
    back = next(k for k in range(1, len(edges)) if edges[k] < max(edges[:k]))
    assert acks[:back + 1] == [(1, 57300), (11449, 45852), (11449, 0)]
    assert res.counters.get("TcpExtTCPRcvQDrop", 0) >= 1
    assert sc.sysctl.get("net.ipv4.tcp_shrink_window", 0) == 0


def test_the_checked_run_allows_only_the_memory_drop_retreat():
    # the same run under the invariant checker: the edge goes back once, at the NOMEM drop,
    # and the checker (which fails on any other retreat) lets exactly that through
    sim, cols = ntb_sim(duration=5_000_000, so_rcvbuf=65536)
    assert sim.rcv.mib.TCPRcvQDrop >= 1 and sim.checks > 0
    wins = [(a, w) for sock, e, a, w in zip(cols["sock"], cols["event"], cols["ack_seq"],
                                             cols["win_scaled"]) if sock == "rcv" and e == "tx"]
    assert (11449, 0) in wins

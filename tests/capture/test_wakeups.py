"""The wakeup-latency measures of tcpsim.capture.wakeups on hand-made logs."""

from tcpsim.capture import wakeups


def test_timer_lateness_is_call_minus_due():
    events = [(1_000_050, "wake", 1_000_000), (1_000_060, "write", 1448),
              (2_000_300, "wake", 2_000_000), (2_000_310, "write_blocked", 0)]
    assert wakeups.timer_lateness(events) == [50, 300]


def test_catch_up_ticks_after_a_stall_are_not_wakeups():
    # the 1 ms tick ran 2.5 ms late; the 2 and 3 ms ticks were due before it finished
    events = [(3_500_000, "wake", 1_000_000), (3_500_100, "write", 1448),
              (3_500_200, "wake", 2_000_000), (3_500_300, "write", 1448),
              (3_500_400, "wake", 3_000_000), (3_500_500, "write", 1448),
              (4_000_070, "wake", 4_000_000), (4_000_090, "write", 1448)]
    assert wakeups.timer_lateness(events) == [2_500_000, 70]
    assert wakeups.timer_lateness(events, slept_only=False) == [2_500_000, 1_500_200,
                                                                500_400, 70]


def test_blocking_latency_counts_only_reads_that_slept():
    # waits at 100 and 500; data at 150 (-> read at 170: 20 ns) and at 450, before the
    # second wait (data already queued: no wakeup, not counted)
    events = [(100, "wait", 0), (170, "read", 1448), (500, "wait", 0), (510, "read", 1448),
              (600, "wait", 0)]
    assert wakeups.blocking_latency(events, [150, 450]) == [20]


def test_data_arrivals_are_in_order_data_segments():
    probes = [{"t_ns": 3, "data_len": 1448, "seq": 10, "rcv_nxt": 10},
              {"t_ns": 1, "data_len": 0, "seq": 10, "rcv_nxt": 10},          # pure ACK
              {"t_ns": 2, "data_len": 1448, "seq": 5000, "rcv_nxt": 1458}]   # out of order
    assert wakeups.data_arrivals(probes) == [3]


def test_quantiles_span_min_to_max_on_integers():
    q = wakeups.quantiles(list(range(1001)), 10)
    assert q == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    assert wakeups.quantiles([7], 4) == [7] * 5 and wakeups.quantiles([], 4) == []


def test_describe():
    d = wakeups.describe(list(range(100)))
    assert (d["n"], d["min_ns"], d["p50_ns"], d["p99_ns"], d["max_ns"]) == (100, 0, 50, 99, 99)
    assert wakeups.describe([]) == {"n": 0}


def test_burstiness_tells_clustered_late_wakeups_from_scattered_ones():
    ms = 1_000_000
    # 4000 wakeups, 40 of them 5 ms late: scattered one per 100, or all in the first 1000
    scattered = [5 * ms if i % 100 == 0 else 0 for i in range(4000)]
    clustered = [5 * ms if i < 80 and i % 2 == 0 else 0 for i in range(4000)]
    clustered[1] = 3 * ms                                  # one run of two late wakeups
    s, c = wakeups.burstiness(scattered), wakeups.burstiness(clustered)
    assert s["late_4ms_per_1000"] == c["late_4ms_per_1000"] == 10.0
    assert s["late_2ms_per_1000"] == 10.0 and c["late_2ms_per_1000"] == 10.25
    assert s["dispersion_late_4ms"] == 0.0 and c["dispersion_late_4ms"] > 20
    assert s["run_late_2ms"] == 1.0 and c["run_late_2ms"] > 1.0
    assert s["acf1_late_2ms"] < 0 < c["acf1_late_2ms"]

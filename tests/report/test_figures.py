"""The figures carry the expected series and every mark, for real simulated runs."""

from __future__ import annotations

import numpy as np
import pytest

from tcpsim.report import figures
from tcpsim.report.runs import make_run
from tcpsim.report.trace import Trace


def _by_name(fig, prefix: str):
    found = [t for t in fig.data if (t.name or "").startswith(prefix)]
    assert found, f"no trace named {prefix!r} in {[t.name for t in fig.data]}"
    return found[0]


def _rows(cols: dict, **want) -> list[int]:
    n = len(cols["t_ns"])
    return [i for i in range(n) if all(cols[k][i] == v for k, v in want.items())]


@pytest.fixture(scope="module")
def fill(fill_run):
    cols, meta = fill_run
    return cols, meta, make_run("fill", cols, meta)


def test_report_has_every_chart_and_a_packet_view_for_a_short_fill(fill) -> None:
    _, _, run = fill
    keys = [c.key for c in figures.report_charts([run])]
    assert keys == ["memory", "events", "packets-fill", "window", "delivery", "rates", "sender",
                    "segments"]


def test_memory_chart_draws_rb_r_and_recv_q_from_the_receiver(fill) -> None:
    cols, _, run = fill
    fig = figures.memory_figure([run])
    rb = _by_name(fig, "skmem_rb")
    r = _by_name(fig, "skmem_r (")
    _by_name(fig, "Recv-Q")
    rcv = _rows(cols, sock="rcv")
    assert max(r.y) == max(cols["sk_rmem_alloc"][i] for i in rcv)
    assert max(rb.y) == 65536                      # SO_RCVBUF 32 KiB, doubled
    assert r.x[-1] == pytest.approx(run.end_s)     # state held to the end of the run


def test_every_zero_window_is_marked_at_zero(fill) -> None:
    cols, _, run = fill
    want = [cols["t_ns"][i] / 1e9 for i in _rows(cols, sock="rcv", event="tx", win_raw=0)
            if "S" not in cols["flags"][i]]
    assert want, "the fill run is expected to advertise a zero window"
    zw = _by_name(figures.window_figure([run]), "zero-window segments")
    assert list(zw.x) == pytest.approx(want)
    assert set(zw.y) == {0}


def test_probes_and_drops_are_marked(fill) -> None:
    cols, _, run = fill
    probes = _rows(cols, sock="snd", event="timer", detail="probe")
    drops = _rows(cols, sock="rcv", event="drop")
    assert len(probes) >= 1 and len(drops) >= 1
    assert len(_by_name(figures.sender_figure([run]), "zero-window probes").x) == len(probes)
    mem = figures.memory_figure([run])
    assert len(_by_name(mem, "segments dropped").x) == len(drops)
    assert _by_name(mem, "segments dropped").text[0].count("TCP_")     # the kernel reason is in the hover


def test_timeline_counts_each_kind(fill) -> None:
    cols, _, run = fill
    fig = figures.timeline_figure([run])
    labels = list(fig.layout.yaxis.ticktext)
    n_probe = len(_rows(cols, sock="snd", event="timer", detail="probe"))
    assert f"zero-window probes ({n_probe})" in labels
    assert "collapse (0)" in labels               # an empty strip says 'never'


def test_packet_view_marks_coalesced_and_queued_per_packet(fill) -> None:
    cols, _, run = fill
    fig = figures.packet_figure(run)
    coalesced = [i for i in _rows(cols, sock="rcv", event="rx", detail="coalesced")
                 if cols["len"][i] > 0]
    ingress = [i for i in range(len(cols["t_ns"]))
               if cols["sock"][i] == "rcv" and cols["event"][i] in ("rx", "drop")]
    marks = _by_name(fig, "coalesced")
    assert len(marks.x) == len(coalesced)
    assert list(marks.x) == [ingress.index(i) + 1 for i in coalesced]
    _by_name(fig, "queued")
    _by_name(fig, "zero window")


def test_no_packet_view_for_a_long_run(growth_runs) -> None:
    cols, meta = growth_runs["stock"]
    run = make_run("stock", cols, meta)
    ingress = len(_rows(cols, sock="rcv", event="rx")) + len(_rows(cols, sock="rcv", event="drop"))
    assert figures.packet_figure(run, max_packets=ingress - 1) is None
    assert figures.packet_figure(run, max_packets=ingress) is not None


def test_comparison_draws_one_line_per_run_and_small_multiples(growth_runs) -> None:
    runs = [make_run(lab, *growth_runs[lab]) for lab in ("stock", "shrink")]
    mem = figures.memory_figure(runs)
    for lab in ("stock", "shrink"):
        _by_name(mem, f"{lab}: skmem_r (")
    stock_peak = max(_by_name(mem, "stock: skmem_r (").y)
    shrink_peak = max(_by_name(mem, "shrink: skmem_r (").y)
    assert stock_peak > 4 * shrink_peak            # the story: growth without the patch
    win = figures.window_figure(runs)
    assert {t.xaxis for t in win.data} == {"x", "x2"}     # one row per run
    zw = [t for t in win.data if "zero-window segments" in (t.name or "")]
    assert len(zw) == 1 and zw[0].name.startswith("shrink: zero-window segments (")  # patch only
    assert len(zw[0].x) > 0 and zw[0].xaxis == "x2"


def test_long_trace_is_downsampled_but_keeps_extremes_and_marks(make_trace) -> None:
    n = 300_000
    rng = np.random.default_rng(5)
    rmem = np.abs(np.cumsum(rng.integers(-3000, 3000, n))) + 4096
    rmem[171_717] = 10**9                                   # a one-row peak
    drops_at = [1_000, 99_999, 171_717, 250_000, 299_998]
    event = np.full(n, "rx", dtype=object)
    event[drops_at] = "drop"
    cols = make_trace([{}] * n)
    cols.update(t_ns=list(np.arange(n) * 1_000_000), sock=["rcv"] * n, event=list(event),
                sk_rmem_alloc=list(rmem), sk_rcvbuf=[2**28] * n, recv_q=list(rmem // 2),
                len=[1448] * n, drop_reason=["PROTO_MEM" if e == "drop" else "" for e in event])
    run = make_run("long", Trace.from_columns(cols), {})
    fig = figures.memory_figure([run], max_points=2000)
    r = _by_name(fig, "skmem_r (")
    assert len(r.x) <= 2001                                 # + the point held to the end
    assert max(r.y) == 10**9 and min(r.y) == rmem.min()
    drop = _by_name(fig, "segments dropped")
    assert list(drop.x) == pytest.approx([i / 1000 for i in drops_at])


def test_comparison_timeline_folds_kinds_that_no_run_has(growth_runs) -> None:
    runs = [make_run(lab, *growth_runs[lab]) for lab in ("stock", "shrink")]
    labels = list(figures.timeline_figure(runs).layout.yaxis.ticktext)
    assert "collapse: none in any run" in labels
    assert "stock · zero-window segments (0)" in labels
    assert any(lab.startswith("shrink · zero-window segments (") and not lab.endswith("(0)")
               for lab in labels)


def test_comparison_gives_recv_q_a_chart_of_its_own(growth_runs) -> None:
    runs = [make_run(lab, *growth_runs[lab]) for lab in ("stock", "shrink")]
    charts = {c.key: c for c in figures.report_charts(runs)}
    assert [t.name for t in charts["recvq"].fig.data] == ["stock", "shrink"]
    assert not any("Recv-Q" in (t.name or "") for t in charts["memory"].fig.data)


# -- reading a figure at a glance (issue 33) ---------------------------------------------------

def test_byte_axes_tick_in_binary_units():
    assert figures.binary_ticks(0, 30 * 2 ** 20)[1][:3] == ["0", "5 MiB", "10 MiB"]
    vals, text = figures.binary_ticks(0, 131072)
    assert text[-1].endswith("KiB") and vals[-1] >= 131072
    vals, text = figures.binary_ticks(1024, 2 ** 28, log=True)
    assert all(v & (v - 1) == 0 for v in map(int, vals)) and "256 MiB" in text


def _seed_compare(variants, duration="5s"):
    import tcpsim
    return tcpsim.compare("seed-unbounded-growth", variants, duration=duration, timing="exact")


def test_many_marks_become_a_density_strip_clear_of_the_curve():
    c = _seed_compare(["linux-6.1", {"profile": "linux-6.1", "policy": "shrink-window"}])
    fig = c.figure("memory")
    prunes = [t for t in fig.data if "prune" in (t.name or "")]
    assert prunes and all(t.yaxis == "y99" for t in prunes)      # not on the curve's axis
    assert "density strip" in prunes[0].name
    n = int(prunes[0].name.split("(")[1].split(",")[0])
    assert n > figures.MARKS_ON_CURVE and len(prunes[0].x) <= figures.DENSITY_BINS
    assert fig.layout.yaxis.domain[1] < fig.layout.yaxis99.domain[0]  # a band above the plot
    assert any("MiB" in t for t in fig.layout.yaxis.ticktext)
    events = c.figure("events")
    row = [t for t in events.data if "prune" in (t.name or "")][0]
    assert len(row.x) <= figures.DENSITY_BINS


def test_runs_that_lie_on_each_other_stay_distinguishable():
    c = _seed_compare(["linux-6.1", "linux-6.18"])
    fig = c.figure("memory")
    later = [t for t in fig.data if t.name == "linux-6.18: skmem_r (sk_rmem_alloc)"][0]
    assert later.line.dash == "dash"
    assert any("lies on linux-6.1" in (t.name or "") for t in fig.data)
    notes = [a for a in fig.layout.annotations if "7.09 MiB" in a.text]
    assert len({a.ay for a in notes}) == len(notes) == 2           # end labels do not collide


def test_identical_runs_are_drawn_once_and_named_for_both():
    c = _seed_compare({"a": "linux-6.1", "b": "linux-6.1"}, duration="1s")
    fig = c.figure("memory")
    names = [t.name or "" for t in fig.data]
    assert any(n.startswith("a = b: skmem_r") for n in names)
    assert not any(n.startswith("b:") for n in names)
    assert any("b is identical to a" in n for n in names)

"""Each drop and zero-window count has one name and one value everywhere (issue 18): the
run's summary, the comparison table, the chart legends and the event strip."""

from __future__ import annotations

import tcpsim
from tcpsim.report import figures
from tcpsim.report.summary import FIELDS_BY_KEY


def _strip_counts(fig) -> dict[str, int]:
    return {t.rsplit(" (", 1)[0]: int(t.rsplit(" (", 1)[1].rstrip(")"))
            for t in fig.layout.yaxis.ticktext}


def test_one_name_per_count_everywhere():
    r = tcpsim.run("seed-rcvbuf32k-fill", profile="linux-6.1", duration="1s")
    c = tcpsim.compare("seed-rcvbuf32k-fill", {"a": "linux-6.1", "b": "linux-6.18"},
                       duration="1s")
    table = {row["key"]: row["values"]["a"] for row in c.rows if row["section"] == "summary"}
    assert table["drops"] == r.summary["drops"]
    assert table["zero_windows_sent"] == r.summary["zero_windows_sent"]
    strip = _strip_counts(figures.timeline_figure([r._as_report_run()]))
    label = FIELDS_BY_KEY["segments_dropped"].label
    assert strip[label] == table["segments_dropped"] >= table["data_segments_dropped"] > 0
    assert strip[FIELDS_BY_KEY["zero_window_segments"].label] == table["zero_window_segments"]
    assert table["zero_window_segments"] >= table["zero_windows_sent"]
    legend = [t.name for t in r.figure("memory").data if t.name and t.name.startswith(label)]
    assert legend == [f"{label} ({table['segments_dropped']})"]

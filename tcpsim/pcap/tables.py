"""A replay's trace as the capture tools read it: kept as Arrow tables, made Python once.

`TableRecorder` is the sink of a capture replay on the native engine (tcpsim.pcap.fit,
tcpsim.pcap.replay): it keeps the engine's row groups as tables and makes the columns in
one conversion at the end, or keeps only the receiver's ACKs (all a fit's grade reads of a
candidate), filtered in Arrow; `acks_view` is the model's view of those ACKs.
"""

from __future__ import annotations

from typing import Any

from tcpsim.trace.recorder import MemoryRecorder, pylist
from tcpsim.validate.trace import STATE_FIELDS, Ack, Series, TraceView

ACK_COLUMNS = ("t_ns", "ack_seq", "win_scaled", "win_raw")


class TableRecorder(MemoryRecorder):
    """Keeps the native engine's row groups as Arrow tables and makes the columns in one
    conversion at the end (MemoryRecorder makes a tuple per row, then columns of them: 3 s of
    a whole 1 Gbit/s capture's replay). `acks_only`: keep only the receiver's ACKs (what
    validate.trace.view takes as one: a 'tx' row of 'rcv', no SYN or RST, an ack_seq) and
    their ACK_COLUMNS, filtered in Arrow before any row becomes a Python object -- all the
    grade reads: a fit's candidate replays cost the engine's time, not the trace's."""

    def __init__(self, socks: tuple[str, ...] = ("rcv",), acks_only: bool = False) -> None:
        super().__init__(socks)
        self.acks_only = acks_only
        self.tables: list[Any] = []

    def record_table(self, table: Any) -> None:
        if self.acks_only:
            import pyarrow as pa
            import pyarrow.compute as pc
            flags = pc.cast(table.column("flags"), pa.string())
            keep = pc.and_(pc.and_(pc.equal(table.column("event"), "tx"),
                                   pc.equal(table.column("sock"), "rcv")),
                           pc.and_(pc.greater_equal(table.column("ack_seq"), 0),
                                   pc.invert(pc.match_substring_regex(flags, "[SR]"))))
            table = table.filter(keep).select(list(ACK_COLUMNS))
        self.tables.append(table)

    def columns(self) -> dict[str, list[Any]]:
        import pyarrow as pa
        cols: dict[str, list[Any]] = {}
        if self.tables:
            table = pa.concat_tables(self.tables)
            cols = {name: pylist(table.column(name)) for name in table.column_names}
        if self.rows or not self.tables:        # rows recorded one by one (Python engine)
            extra = super().columns()
            if self.acks_only:
                keep = [i for i, (s, e, a, f) in enumerate(zip(
                    extra["sock"], extra["event"], extra["ack_seq"], extra["flags"]))
                    if s == "rcv" and e == "tx" and a >= 0 and "S" not in f and "R" not in f]
                extra = {c: [extra[c][i] for i in keep] for c in ACK_COLUMNS}
            cols = {k: cols.get(k, []) + v for k, v in extra.items()}
        return cols


def acks_view(cols: dict[str, list[Any]], delta: int) -> TraceView:
    """A model view of only its ACKs (TableRecorder(acks_only=True)'s columns), every time
    moved by delta: what grade() reads of the model, as view(...).shifted(delta) would give
    it, without a pass over every row of the trace."""
    acks = sorted((Ack(t + delta, a, w, r) for t, a, w, r in zip(*(cols[c] for c in ACK_COLUMNS))),
                  key=lambda a: a.t_ns)
    return TraceView("tcpsim", "after", acks, {f: Series() for f in STATE_FIELDS}, [], [], [],
                     [], None, {}, {"source": "tcpsim"}, len(acks))

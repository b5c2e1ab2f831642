"""Writer and reader kinds (tcpsim/workload.py): declared once, validated once, and run by
the simulator, the capture tool and the replay -- each implementing exactly those kinds."""

import pytest

from tcpsim.capture import apps as capture_apps
from tcpsim.capture.spec import parse as capture_parse
from tcpsim.engine import apps as engine_apps
from tcpsim.errors import ScenarioError
from tcpsim.scenario import scenario_from_dict
from tcpsim.validate import replay
from tcpsim.workload import (
    DEFAULT_READER, DEFAULT_WRITER, READER_KINDS, WRITER_KINDS, App, parse_app,
)

from exact import exact

MS = 1_000_000


def test_every_runner_implements_exactly_the_declared_kinds():
    assert set(engine_apps.WRITERS) == set(WRITER_KINDS)
    assert set(engine_apps.READER_PHASES) == set(READER_KINDS)
    assert set(capture_apps.WRITERS) == set(WRITER_KINDS)
    assert set(capture_apps.READERS) == set(READER_KINDS)
    assert set(replay.CLOCKED_WRITERS) == set(WRITER_KINDS)
    assert set(replay.READ_TICKS) == set(replay.CLOCKED_READERS) == set(READER_KINDS) - {"never"}


@pytest.mark.parametrize("role,table,want", [
    ("writer", {"kind": "bulk"}, App("bulk", bytes=65536)),
    ("writer", {"kind": "bulk", "bytes": "1MiB"}, App("bulk", bytes=1 << 20)),
    ("writer", {"kind": "periodic", "bytes": 1448, "every": "1ms"}, App("periodic", 1448, MS)),
    ("writer", {"kind": "periodic", "bytes": 10, "every": 2, "start": "1s"},
     App("periodic", 10, 2000 * MS, start=1000 * MS)),
    ("reader", {"kind": "never"}, App("never")),
    ("reader", {"kind": "fast"}, App("fast", bytes=1 << 20)),
    ("reader", {"kind": "periodic", "bytes": 1, "every": "1ms"}, App("periodic", 1, MS)),
    ("reader", {"kind": "oscillating", "bytes": 1, "every": "1ms", "bytes2": 3300,
                "every2": "2ms", "period": "5s"},
     App("oscillating", 1, MS, 3300, 2 * MS, 5000 * MS)),
    ("reader", {"kind": "oscil", "fraction": 0.1, "fast_for": "1s"},
     App("oscil", fast_for=1000 * MS, fraction=0.1)),
    ("reader", {}, DEFAULT_READER), ("writer", {}, DEFAULT_WRITER),
])
def test_parse_app(role, table, want):
    default = DEFAULT_READER if role == "reader" else DEFAULT_WRITER
    assert parse_app(table, role, default) == want


@pytest.mark.parametrize("role,table,msg", [
    ("writer", {"kind": "never"}, "writer.kind: expected one of bulk, periodic, got 'never'"),
    ("reader", {"kind": "bulk"},
     "reader.kind: expected one of blocking, fast, never, oscil, oscillating, periodic, relay, got 'bulk'"),
    ("reader", {"bytes": 1}, "reader.kind: expected one of"),
    ("reader", {"kind": "periodic", "bytes": 1}, 'reader.every: required for kind = "periodic"'),
    ("reader", {"kind": "oscillating", "bytes": 1, "every": 1, "bytes2": 1, "every2": 1},
     'reader.period: required for kind = "oscillating"'),
    ("writer", {"kind": "periodic", "bytes": 1, "every": "0ms"}, "writer.every: must be longer than zero"),
    ("writer", {"kind": "periodic", "bytes": 0, "every": "1ms"}, "writer.bytes: must be at least 1"),
    ("reader", {"kind": "periodic", "bytes": 0, "every": "1ms"}, "reader.bytes: must be at least 1"),
    ("reader", {"kind": "oscil", "fraction": 0}, "reader.fraction: expected a number in (0, 1]"),
    ("reader", {"kind": "oscil", "fraction": True}, "reader.fraction: expected a number in (0, 1]"),
    ("reader", {"kind": "fast", "speed": 1}, "reader.speed: unknown field; allowed here:"),
    ("reader", {"kind": "periodic", "bytes": "lots", "every": "1ms"}, "reader.bytes: 'lots' is not a size"),
    ("writer", {"kind": "periodic", "bytes": 1, "every": "-1ms"}, "writer.every: duration must not be negative"),
])
def test_parse_app_refuses(role, table, msg):
    with pytest.raises(ScenarioError) as e:
        parse_app(table, role, DEFAULT_WRITER)
    assert str(e.value).startswith(msg)


@pytest.mark.parametrize("doc", [
    {"writer": {"kind": "periodic", "bytes": 1448, "every": "1ms"},
     "reader": {"kind": "oscillating", "bytes": 1, "every": "1ms", "bytes2": 3300, "every2": "1ms",
                "period": "5s"}},
    {"writer": {"kind": "bulk"}, "reader": {"kind": "oscil"}},
    {},
])
def test_run_and_capture_read_the_same_apps(doc):
    # exact: the default timing is the model's stand-in for a host; the capture runs real apps
    sc, cap = scenario_from_dict(exact(doc)), capture_parse(doc)
    assert (sc.writer, sc.reader) == (cap.writer, cap.reader)


def test_rate_at():
    osc = App("oscillating", 1, MS, 3300, 2 * MS, period=10 * MS)
    assert [osc.rate_at(t) for t in (0, 9 * MS, 10 * MS, 19 * MS, 20 * MS, -5)] == \
        [(1, MS), (1, MS), (3300, 2 * MS), (3300, 2 * MS), (1, MS), (1, MS)]
    per = App("periodic", 7, MS, period=10 * MS)           # period is not a periodic field
    assert per.rate_at(15 * MS) == (7, MS)


def test_app_round_trips_through_json_for_the_capture_endpoints():
    import json
    app = App("oscillating", 1, MS, 3300, 2 * MS, 5000 * MS, start=3)
    assert App(**json.loads(json.dumps(app.as_dict()))) == app

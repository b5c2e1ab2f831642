"""Scenario files (TOML) -> a validated `Scenario`.

Every problem is reported as one `ScenarioError` line that names the field and says what to
write instead, e.g. `link.rtt: "20 ms" is not a duration; write e.g. "20ms" or 0.02`.
The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from tcpsim.core.constants import NS_PER_S
from tcpsim.core.devices import DEVICES, FIELDS as DEVICE_FIELDS, build as build_device
from tcpsim.core.clock import parse_hz
from tcpsim.core.sysctl import SysctlError
from tcpsim.errors import ScenarioError
from tcpsim.sysctl_parse import parse_table as parse_sysctl_table
from tcpsim.units import parse_duration, parse_rate, parse_size
from tcpsim.workload import DEFAULT_READER, DEFAULT_WRITER, App, parse_app, timing_fields

# The shipped experiments (a folder of the package: Path, not importlib.resources, whose
# import costs ~10 ms of every start).
EXPERIMENTS = Path(__file__).resolve().with_name("experiments")

__all__ = ["ScenarioError", "Scenario", "Link", "App", "load_scenario", "scenario_from_dict",
           "read_scenario_file", "builtin_experiments", "builtin_experiment", "check_hz"]


def check_hz(value: Any, where: str) -> int:
    """The kernel's CONFIG_HZ (100, 250, 300 or 1000), or a ScenarioError naming `where`."""
    try:
        return parse_hz(value, where)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


@dataclass(frozen=True)
class Link:
    delay_ab: int = 10_000_000        # sender -> receiver, ns
    delay_ba: int = 10_000_000        # receiver -> sender, ns
    rate_bps: int = 0                 # 0 = unlimited
    queue_limit: int = 1000           # packets, with a rate
    loss: float = 0.0                 # data direction
    jitter: int = 0                   # mean extra delay per packet, ns (order-preserving)
    mtu: int = 1500
    kind: str = "fifo"                # "fifo" (rate + queue_limit packets) or "tbf"
    burst: int = 0                    # tbf: bucket size, bytes
    limit: int = 0                    # tbf: queue limit, bytes


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str = ""
    profile: str = "linux-6.18"
    hz: int = 0                       # CONFIG_HZ of the modelled kernel (0 = tcpsim's default clock)
    duration: int = 10 * NS_PER_S
    seed: int = 1
    sysctl: dict[str, Any] = field(default_factory=dict)
    link: Link = field(default_factory=Link)
    receiver_role: str = "client"
    device: str = "veth"
    so_rcvbuf: int = 0
    initrwnd: int = 0                 # route initrwnd of the receiver, segments (0 = unset)
    initcwnd: int = 10
    nodelay: bool = True
    writer: App = DEFAULT_WRITER
    reader: App = DEFAULT_READER
    # Data the other way ([receiver.writer] -> [sender.reader]), and the sender end's own
    # ingress device ([sender.device]); unset: one-way data into the receiver, as before.
    rev_writer: App | None = None
    rev_reader: App | None = None
    sender_device: str = "veth"
    # the sender end's own sysctls ([sender.sysctl]; the receiver's are [sysctl])
    sender_sysctl: dict[str, Any] = field(default_factory=dict)
    policies: tuple[str, ...] = ()
    # The run's application timing: a host preset whose calibrated defaults the applications
    # without a `latency` of their own got, or "exact" (none); "" = built in code, not read
    # from a scenario (packetdrill, replays): the applications' own timing only.
    timing: str = ""
    source: str = ""
    engine: str = ""                  # "python" | "native"; "" = the default (how it runs, not what)

    def with_(self, **changes: Any) -> "Scenario":
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly record (stored in trace metadata)."""
        from dataclasses import asdict
        d = asdict(self)
        del d["engine"]                # which engine ran is not part of what was modelled
        if not self.hz:
            del d["hz"]                # unset: the model's default clock, as before the field
        if not self.timing:
            del d["timing"]            # built in code: the apps' own timing says it all
        for key, unset in (("rev_writer", None), ("rev_reader", None), ("sender_device", "veth"),
                           ("sender_sysctl", {})):
            if d[key] == unset:
                del d[key]             # one-way scenarios read as before these fields
        if d["link"]["kind"] == "fifo":
            for key in ("kind", "burst", "limit"):
                del d["link"][key]      # FIFO links read as before the token bucket
        for key in ("writer", "reader", "rev_writer", "rev_reader"):
            if d.get(key) is not None:
                d[key] = timing_fields(d[key])   # exact timing reads as before the fields
        return d

    @property
    def two_way(self) -> bool:
        """Data flows both ways: the receiver end writes too ([receiver.writer])."""
        return self.rev_writer is not None


_TOP = {"name", "description", "profile", "hz", "duration", "seed", "sysctl", "link", "receiver", "engine",
        "sender", "writer", "reader", "policies", "timing"}


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ScenarioError(f"{where}{key}: unknown field; allowed here: {', '.join(sorted(allowed))}")


def _table(raw: dict, key: str, where: str = "") -> dict:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}{key}: expected a table [{where}{key}], "
                            f"got {type(value).__name__}")
    return value


def _parse_reverse(sc: Scenario, writer: dict, reader: dict) -> Scenario:
    """[receiver.writer] and [sender.reader]: data from the receiver end back to the sender
    end. A reverse writer without a reader gets the default (fast) reader; a reader alone has
    nothing to read."""
    if not writer:
        if reader:
            raise ScenarioError("sender.reader: nothing flows to the sender end; add a "
                                "[receiver.writer] table")
        return sc
    return replace(sc, rev_writer=parse_app(writer, "writer", DEFAULT_WRITER, "receiver.writer"),
                   rev_reader=parse_app(reader, "reader", DEFAULT_READER, "sender.reader"))


_APP_TABLES = {"writer": ("writer", ()), "reader": ("reader", ()),
               "rev_writer": ("writer", ("receiver",)), "rev_reader": ("reader", ("sender",))}


def _parse_timing(sc: Scenario, raw: dict) -> Scenario:
    """[timing] host = "...": the run's host preset (tcpsim.app_latency.HOSTS, default
    DEFAULT_HOST) or "exact". Every application that gives no `latency` gets the preset's
    calibrated default for its kind (app_latency.DEFAULT_TIMING; "exact": none), and those
    replaying captured sequences replay this preset's: one host runs them all."""
    from tcpsim.app_latency import (
        DEFAULT_HOST, EXACT, HOSTS, SEQUENCES, check_timing, default_latency)
    table = _table(raw, "timing")
    _check_keys(table, {"host"}, "timing.")
    try:
        host = check_timing(table.get("host", DEFAULT_HOST))
    except ValueError as exc:
        raise ScenarioError(f"timing.host: {exc}") from None
    apps: dict[str, App] = {}
    for role, (side, parents) in _APP_TABLES.items():
        app = getattr(sc, role)
        if app is None:
            continue
        doc = raw
        for parent in parents:
            doc = doc.get(parent, {})
        given = doc.get(side, {})
        where = ".".join((*parents, side))
        if "latency" not in given:
            name = default_latency(host, side, app.kind)
            app = replace(app, latency_table=name) if name else app
        elif host == EXACT and app.latency_table in SEQUENCES:
            raise ScenarioError(f'{where}.latency: "{app.latency_table}" replays a host\'s '
                                'captured wakeups, and timing.host = "exact" names none; '
                                f"choose a host preset ({', '.join(sorted(HOSTS))}) "
                                'or latency = "none"')
        if app.latency_table in SEQUENCES:
            app = replace(app, latency_host=host)
        apps[role] = app
    return replace(sc, timing=host, **apps)


def _parse_device(value: Any, link_mtu: int, where: str) -> str:
    """A device as a preset name or a `[...device]` table -> the name the engines look up
    (a preset's name, or the described device's spec string, tcpsim/core/devices.py).

    The table takes `preset = "veth"` or `strategy = "kmalloc"` plus the strategy's fields
    (buf, mtu, rx_copybreak, gro); see docs/scenarios.md."""
    if isinstance(value, str):
        if value not in DEVICES:
            raise ScenarioError(f"{where}: expected one of {', '.join(DEVICES)}, got {value!r}")
        return value
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: expected a preset name or a table, got {value!r}")
    fields = dict(value)
    preset, strategy = fields.pop("preset", None), fields.pop("strategy", None)
    for key in fields:                       # a misspelt key is named before anything else
        if key not in DEVICE_FIELDS:
            raise ScenarioError(f"{where}.{key}: unknown field; allowed: preset, strategy, "
                                + ", ".join(DEVICE_FIELDS))
    if (preset is None) == (strategy is None):
        raise ScenarioError(f'{where}: give either preset (one of {", ".join(DEVICES)}) or '
                            'strategy (sender, tun, page-frag, page, kmalloc), not both or neither')
    if preset is not None and preset not in DEVICES:
        raise ScenarioError(f"{where}.preset: expected one of {', '.join(DEVICES)}, got {preset!r}")
    try:
        dev = build_device(str(preset or strategy), fields, link_mtu, where)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    return dev.name


def _parse_link(t: dict) -> Link:
    _check_keys(t, {"rtt", "delay", "delay_ab", "delay_ba", "rate", "queue_limit", "loss", "mtu",
                    "jitter", "kind", "burst", "limit"}, "link.")
    link = _parse_bucket(t)
    if "rtt" in t:
        rtt = parse_duration(t["rtt"], "link.rtt")
        link = replace(link, delay_ab=rtt // 2, delay_ba=rtt - rtt // 2)
    if "delay" in t:
        d = parse_duration(t["delay"], "link.delay")
        link = replace(link, delay_ab=d, delay_ba=d)
    for k in ("delay_ab", "delay_ba"):
        if k in t:
            link = replace(link, **{k: parse_duration(t[k], f"link.{k}")})
    if "rate" in t:
        link = replace(link, rate_bps=parse_rate(t["rate"], "link.rate"))
    if "queue_limit" in t:
        q = t["queue_limit"]
        if not isinstance(q, int) or q < 1:
            raise ScenarioError(f"link.queue_limit: expected a positive number of packets, got {q!r}")
        link = replace(link, queue_limit=q)
    if "loss" in t:
        loss = t["loss"]
        if not isinstance(loss, (int, float)) or not 0 <= loss < 1:
            raise ScenarioError(f"link.loss: expected a probability in [0, 1), got {loss!r}")
        link = replace(link, loss=float(loss))
    if "jitter" in t:
        link = replace(link, jitter=parse_duration(t["jitter"], "link.jitter"))
    if "mtu" in t:
        mtu = t["mtu"]
        if not isinstance(mtu, int) or not 576 <= mtu <= 65536:
            raise ScenarioError(f"link.mtu: expected an integer from 576 to 65536, got {mtu!r}")
        link = replace(link, mtu=mtu)
    return link


_TC_SIZES = {"b": 1, "kb": 1024, "k": 1024, "mb": 1024**2, "m": 1024**2, "gb": 1024**3}


def _tc_size(value: Any, where: str) -> int:
    """A size as `tc` writes it (get_size() in iproute2's tc_util.c: b, kb/k, mb/m, gb are
    powers of 1024), else as tcpsim.units.parse_size reads it."""
    import re
    m = re.match(r"^\s*([0-9]+)\s*(b|kb|k|mb|m|gb)\s*$", value) if isinstance(value, str) else None
    if m:
        return int(m.group(1)) * _TC_SIZES[m.group(2)]
    return parse_size(value, where)


def _parse_bucket(t: dict) -> Link:
    """[link] kind = "tbf" with rate, burst and limit as `tc qdisc add ... tbf rate R burst B
    limit L` takes them: sizes as tc writes them ("1500b", "32kb", "3mb": tc's kb is 1024
    bytes) or as elsewhere in a scenario ("32KiB", 12500); kind = "fifo" (the default) keeps
    the packet-count queue."""
    kind = t.get("kind", "fifo")
    if kind not in ("fifo", "tbf"):
        raise ScenarioError(f'link.kind: expected "fifo" or "tbf", got {kind!r}')
    if kind == "fifo":
        for k in ("burst", "limit"):
            if k in t:
                raise ScenarioError(f'link.{k}: a token-bucket field; add kind = "tbf" or '
                                    f"remove it")
        return Link()
    for k in ("rate", "burst", "limit"):
        if k not in t:
            raise ScenarioError(f'link.{k}: required for kind = "tbf" (as tc tbf requires it)')
    if "queue_limit" in t:
        raise ScenarioError('link.queue_limit: a FIFO field (packets); kind = "tbf" takes '
                            "limit in bytes")
    burst = _tc_size(t["burst"], "link.burst")
    limit = _tc_size(t["limit"], "link.limit")
    if burst < 1 or limit < 1:
        raise ScenarioError(f"link.{'burst' if burst < 1 else 'limit'}: must be at least 1 byte")
    return Link(kind="tbf", burst=burst, limit=limit)


def scenario_from_dict(raw: dict[str, Any], source: str = "") -> Scenario:
    """Validate a parsed TOML document into a Scenario."""
    _check_keys(raw, _TOP, "")
    name = raw.get("name") or (Path(source).stem if source else "scenario")
    sc = Scenario(name=str(name), description=str(raw.get("description", "")), source=source)
    if "profile" in raw:
        if not isinstance(raw["profile"], str):
            raise ScenarioError(f'profile: expected a profile name such as "linux-6.1", got {raw["profile"]!r}')
        sc = replace(sc, profile=raw["profile"])
    if "hz" in raw:
        sc = replace(sc, hz=check_hz(raw["hz"], "hz"))
    if "duration" in raw:
        sc = replace(sc, duration=parse_duration(raw["duration"], "duration", positive=True))
    if "engine" in raw:
        if raw["engine"] not in ("python", "native"):
            raise ScenarioError(f'engine: expected "python" or "native", got {raw["engine"]!r}')
        sc = replace(sc, engine=raw["engine"])
    if "seed" in raw:
        if not isinstance(raw["seed"], int) or isinstance(raw["seed"], bool):
            raise ScenarioError(f"seed: expected an integer, got {raw['seed']!r}")
        sc = replace(sc, seed=raw["seed"])
    try:
        sysctl = parse_sysctl_table(_table(raw, "sysctl"))
    except SysctlError as exc:
        raise ScenarioError(str(exc)) from None
    sc = replace(sc, sysctl=sysctl, link=_parse_link(_table(raw, "link")))
    rcv = _table(raw, "receiver")
    _check_keys(rcv, {"role", "device", "so_rcvbuf", "initrwnd", "writer"}, "receiver.")
    if "role" in rcv:
        if rcv["role"] not in ("client", "server"):
            raise ScenarioError(f'receiver.role: expected "client" or "server", got {rcv["role"]!r}')
        sc = replace(sc, receiver_role=rcv["role"])
    if "device" in rcv:
        sc = replace(sc, device=_parse_device(rcv["device"], sc.link.mtu, "receiver.device"))
    if "so_rcvbuf" in rcv:
        sc = replace(sc, so_rcvbuf=parse_size(rcv["so_rcvbuf"], "receiver.so_rcvbuf"))
    if "initrwnd" in rcv:
        if not isinstance(rcv["initrwnd"], int) or not 0 <= rcv["initrwnd"] <= 65535:
            raise ScenarioError(f"receiver.initrwnd: expected a number of segments 0..65535, "
                                f"got {rcv['initrwnd']!r}")
        sc = replace(sc, initrwnd=rcv["initrwnd"])
    snd = _table(raw, "sender")
    _check_keys(snd, {"initcwnd", "nodelay", "device", "reader", "sysctl"}, "sender.")
    try:
        sc = replace(sc, sender_sysctl=parse_sysctl_table(_table(snd, "sysctl", "sender.")))
    except SysctlError as exc:
        raise ScenarioError(f"sender.sysctl: {exc}") from None
    if "device" in snd:
        sc = replace(sc, sender_device=_parse_device(snd["device"], sc.link.mtu, "sender.device"))
    if "initcwnd" in snd:
        if not isinstance(snd["initcwnd"], int) or snd["initcwnd"] < 1:
            raise ScenarioError(f"sender.initcwnd: expected a positive integer, got {snd['initcwnd']!r}")
        sc = replace(sc, initcwnd=snd["initcwnd"])
    if "nodelay" in snd:
        if not isinstance(snd["nodelay"], bool):
            raise ScenarioError(f"sender.nodelay: expected true or false, got {snd['nodelay']!r}")
        sc = replace(sc, nodelay=snd["nodelay"])
    sc = replace(sc, writer=parse_app(_table(raw, "writer"), "writer", sc.writer),
                 reader=parse_app(_table(raw, "reader"), "reader", sc.reader))
    sc = _parse_reverse(sc, _table(rcv, "writer", "receiver."), _table(snd, "reader", "sender."))
    sc = _parse_timing(sc, raw)
    if sc.reader.kind == "relay" and sc.rev_writer is None:
        raise ScenarioError('reader.kind: "relay" reads between the writes of its own end\'s '
                            "writer, and the receiver end has none; add a [receiver.writer] "
                            'table, or use kind = "fast"')
    pol = raw.get("policies", [])
    if not isinstance(pol, list) or not all(isinstance(p, str) for p in pol):
        raise ScenarioError('policies: expected a list of patch names, e.g. ["shrink-window"]')
    return replace(sc, policies=tuple(pol))


def set_field(doc: dict[str, Any], key: str, value: Any, where: str = "") -> None:
    """Set field `key` of a scenario document (its TOML tables as dicts), in place: a dotted
    path of any depth (`link.rtt`, `receiver.device.rx_copybreak`); `sysctl.NAME` names one
    sysctl, dots and all (`sysctl.net.ipv4.tcp_rmem`), and `sender.sysctl.NAME` one of the
    sender's (`sender.sysctl.net.ipv4.tcp_congestion_control`); a device given by its preset name
    becomes a table that can take a field. The one way `compare --set`, sweep axes and the
    docs' figures change a scenario; the result is validated by scenario_from_dict()."""
    if key.startswith("sysctl."):
        doc.setdefault("sysctl", {})[key[len("sysctl."):]] = value
        return
    if key.startswith("sender.sysctl."):
        sender = doc.setdefault("sender", {})
        if not isinstance(sender, dict):
            raise ScenarioError(f"{where or key}: sender is not a table")
        sender.setdefault("sysctl", {})[key[len("sender.sysctl."):]] = value
        return
    *path, name = key.split(".")
    table = doc
    for part in path:
        nxt = table.setdefault(part, {})
        if isinstance(nxt, str) and part == "device":
            nxt = table[part] = {"preset": nxt}
        if not isinstance(nxt, dict):
            raise ScenarioError(f"{where or key}: {part} is not a table")
        table = nxt
    table[name] = value


def apply_settings(doc: dict[str, Any], sets: Iterable[str], option: str = "--set") -> None:
    """`FIELD=VALUE` settings (`compare --set`, `validate --plain --set`) on a scenario
    document, in place: VALUE an integer, true/false, or text; FIELD as set_field() takes it."""
    for item in sets:
        key, eq, text = item.partition("=")
        if not eq or not key or key.startswith(".") or key.endswith("."):
            raise ScenarioError(f"{option} {item}: expected FIELD=VALUE, e.g. "
                                "receiver.device.rx_copybreak=256")
        value: object = int(text) if text.lstrip("-").isdigit() else \
            {"true": True, "false": False}.get(text, text)
        set_field(doc, key, value, f"{option} {item}")


def set_timing(doc: dict[str, Any], timing: str, where: str = "--timing") -> None:
    """Give a scenario document the run's timing (`[timing] host`: a host preset or "exact"),
    as `--timing` does; a bad value is a ScenarioError naming `where` and the choices."""
    from tcpsim.app_latency import check_timing
    try:
        check_timing(timing)
    except ValueError as exc:
        raise ScenarioError(f"{where} {timing}: {exc}") from None
    set_field(doc, "timing.host", timing)


def load_scenario(path: str | Path, timing: str | None = None) -> Scenario:
    """Read and validate a scenario file; a bare name finds a built-in experiment. `timing`
    (`--timing`): the run's timing in place of the file's `[timing] host`."""
    raw, source = read_scenario_file(path)
    if not raw:
        raise ScenarioError(f"{source}: the file sets nothing (an empty scenario would run the "
                            "defaults); give at least a [writer] and a [reader], or run a built-in "
                            f"experiment such as {builtin_experiments()[0]}")
    if isinstance(raw.get("class"), dict):
        raise ScenarioError(f"{source}: a host file ([class.NAME] tables, docs/hosts.md), not "
                            f"a one-connection scenario; run it with `tcpsim run {path}` or sweep "
                            "it with `tcpsim sweep`")
    if timing is not None:
        set_timing(raw, timing)
    try:
        return scenario_from_dict(raw, source=source)
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def read_scenario_file(path: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML document of a scenario file (not yet validated) and its path; a bare
    name finds a built-in experiment."""
    p = Path(path)
    if not p.exists() and not p.suffix:
        builtin = builtin_experiment(str(path))
        if builtin is not None:
            p = builtin
    if p.is_dir():
        raise ScenarioError(f"{path}: is a directory; give a scenario file (.toml) or the name "
                            "of a built-in experiment (tcpsim experiments)")
    if not p.is_file():
        raise ScenarioError(f"{path}: no such scenario file (built-in experiments: "
                            f"{', '.join(builtin_experiments())})")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8")), str(p)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{p}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{p}: not a text file (not UTF-8): give a scenario TOML file") from None
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot be read ({exc.strerror})") from None


def builtin_experiments() -> list[str]:
    """Names of the experiments shipped with tcpsim."""
    return sorted(e.stem for e in EXPERIMENTS.glob("*.toml"))


def shipped_file(folder: str, arg: str | Path) -> Path | None:
    """A study or search argument: a file, or the name of one shipped in experiments/FOLDER
    (no suffix); None when it is neither."""
    p = Path(arg)
    if p.is_file():
        return p
    cand = EXPERIMENTS / folder / f"{arg}.toml"
    return cand if not p.suffix and cand.is_file() else None


def shipped_names(folder: str) -> list[str]:
    """Names of the files shipped in experiments/FOLDER (studies, searches)."""
    return sorted(e.stem for e in (EXPERIMENTS / folder).glob("*.toml"))


def builtin_experiment(name: str) -> Path | None:
    """Path of a shipped experiment by name (without .toml)."""
    cand = EXPERIMENTS / f"{name}.toml"
    return cand if cand.is_file() else None

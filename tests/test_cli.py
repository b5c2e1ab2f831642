"""The tcpsim command: user errors are one line and exit 2; results print and --json works."""

import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from tcpsim.cli import app

runner = CliRunner()


def test_run_json_summary():
    r = runner.invoke(app, ["run", "seed-rcvbuf32k-fill", "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["summary"]["final_sk_rcvbuf"] == 65536 and "TcpExtTCPRcvCoalesce" in d["counters"]


@pytest.mark.parametrize("args,needle", [
    (["run", "no-such-experiment"], "no such scenario"),
    (["run", "seed-rcvbuf32k-fill", "-p", "linux-9.9"], "unknown profile"),
    (["run", "seed-rcvbuf32k-fill", "--hz", "200"], "--hz: 200 is not a kernel tick rate"),
    (["run", "seed-rcvbuf32k-fill", "-p", "linux-6.18", "-s", "net.ipv4.tcp_shrink_window=5"],
     "must be 0 or 1"),
    (["run", "seed-rcvbuf32k-fill", "-p", "linux-5.15", "-s", "net.ipv4.tcp_shrink_window=1"],
     "does not exist on linux-5.15"),
    (["run", "seed-rcvbuf32k-fill", "--policy", "nonexistent"], "unknown patch"),
    (["run", "seed-rcvbuf32k-fill", "--duration", "soon"], "--duration"),
])
def test_user_errors_are_one_line_without_traceback(args, needle):
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_profiles_list_and_show():
    r = runner.invoke(app, ["profiles"])
    assert "linux-6.1" in r.output and "linux-6.18" in r.output
    r = runner.invoke(app, ["profiles", "show", "linux-6.6"])
    assert "win_from_space" in r.output and "Linux66" in r.output


def test_user_policy_file_overrides_one_decision_point(tmp_path):
    f = tmp_path / "my_patch.py"
    f.write_text(textwrap.dedent('''
        class AlwaysShrink:
            """Retract the window whenever memory says so (like tcp_shrink_window=1)."""
            name = "always-shrink"
            def shrink_allowed(self, sk):
                return sk.conn.rcv_wscale != 0
    '''))
    base = runner.invoke(app, ["run", "seed-never-reads", "-d", "20s", "--json", "--no-progress"])
    pat = runner.invoke(app, ["run", "seed-never-reads", "-d", "20s", "--json", "--no-progress",
                              "--policy", f"{f}:AlwaysShrink"])
    assert pat.exit_code == 0, pat.output
    b, p = json.loads(base.output), json.loads(pat.output)
    assert p["profile"].endswith("+AlwaysShrink") or "always-shrink" in p["profile"]
    assert b["summary"]["zero_windows_sent"] == 0 and p["summary"]["zero_windows_sent"] > 0
    assert p["summary"]["peak_sk_rcvbuf"] < b["summary"]["peak_sk_rcvbuf"]


def test_compare_writes_a_self_contained_report(tmp_path):
    out = tmp_path / "cmp.html"
    r = runner.invoke(app, ["compare", "seed-never-reads", "-d", "5s", "--html", str(out),
                            "--profile", "linux-6.1", "--vs", "linux-6.1", "--policy", "shrink-window"])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "shrink-window" in r.output and "windows closed to zero" in r.output
    assert "<script src=\"http" not in page and "plotly" in page.lower()
    from tcpsim.report.html import plotly_js_name
    assert f'src="{plotly_js_name()}"' in page and (tmp_path / plotly_js_name()).is_file()


def test_compare_sets_scenario_fields_per_variant_and_shows_both_directions(tmp_path):
    # the ntb case: 48-byte messages back cost a 128 KiB kmalloc each, 832 with copybreak
    r = runner.invoke(app, ["compare", "ntb-jumbo-rx", "-d", "100ms", "--html", str(tmp_path / "c.html"),
                            "--json", "--profile", "linux-6.18", "--vs", "linux-6.18",
                            "--set", "receiver.device.rx_copybreak=256",
                            "--set", "sender.device.rx_copybreak=256"])
    assert r.exit_code == 0, r.output
    rows = {row["key"]: row for row in json.loads(r.output)["rows"] if row["section"] == "summary"}
    peak = list(rows["rev_peak_sk_rmem_alloc"]["values"].values())
    assert peak == [131328, 832]
    read = list(rows["rev_bytes_read"]["values"].values())
    assert read[0] == read[1] > 0


@pytest.mark.parametrize("args,needle", [
    (["compare", "ntb-jumbo-rx", "--profile", "linux-6.18", "--vs", "linux-6.18", "--set",
      "receiver.device.rx_copybreak=999999"], "receiver.device.rx_copybreak: 999999 is larger"),
    (["compare", "ntb-jumbo-rx", "--profile", "linux-6.18", "--vs", "linux-6.18", "--set",
      "receiver"], "--set receiver: expected FIELD=VALUE"),
    (["compare", "seed-never-reads", "--profile", "linux-6.1"], "at least two variants"),
    (["compare", "seed-never-reads", "--policy", "x", "--profile", "linux-6.1"], "after the --profile"),
    (["compare", "seed-never-reads", "--profile", "linux-6.1", "--vs", "linux-9"], "unknown profile"),
])
def test_compare_user_errors(args, needle):
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_report_of_a_trace(tmp_path):
    trace = tmp_path / "t.parquet"
    assert runner.invoke(app, ["run", "seed-rcvbuf32k-fill", "--trace", str(trace), "--no-progress"]).exit_code == 0
    r = runner.invoke(app, ["report", str(trace), "--html", str(tmp_path / "t.html")])
    assert r.exit_code == 0 and (tmp_path / "t.html").stat().st_size > 100_000


def test_capture_refuses_without_root(monkeypatch):
    import os
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = runner.invoke(app, ["capture", "seed-never-reads"])
    assert r.exit_code == 2 and "needs root" in r.output


@pytest.mark.parametrize("args,needle", [
    (["--tbf-burst", "25000"], "--tbf-burst/--tbf-limit: the scenario has no [link] rate"),
    (["--tbf-limit", "0"], "--tbf-limit: must be at least one byte"),
    (["--tbf-burst", "lots"], "--tbf-burst: 'lots' is not a size"),
    (["--cpu", "64"], "--cpu: this machine has CPUs 0 to"),
    (["--reader-cpu", "64"], "--reader-cpu: this machine has CPUs 0 to"),
    (["--reader-cpu", "0"], "--reader-cpu: CPU 0 is --cpu already"),
])
def test_capture_refuses_bad_bottleneck_options_before_capturing(monkeypatch, args, needle):
    # as root with every tool present, the options are checked before any namespace exists
    import os

    import tcpsim.capture.netns as netns
    import tcpsim.capture.probe as probe
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "missing_tools", lambda: [])
    monkeypatch.setattr(probe, "available", lambda: True)
    import tcpsim.capture.capture as cap
    monkeypatch.setattr(cap, "capture", lambda *a, **k: pytest.fail("captured"))
    r = runner.invoke(app, ["capture", "seed-never-reads", *args])
    assert r.exit_code == 2, r.output
    assert needle in r.output and len(r.output.strip().splitlines()) == 1


def test_validate_scores_a_committed_fixture():
    from pathlib import Path
    fixture = Path(__file__).resolve().parent / "fixtures" / "kernel"
    traces = sorted(fixture.glob("seed-rcvbuf32k-fill*.parquet"))
    if not traces:
        pytest.skip("no committed kernel fixture")
    r = runner.invoke(app, ["validate", str(traces[0])])
    assert r.exit_code == 0, r.output
    assert "pass" in r.output.lower()


def test_run_at_a_kernel_tick():
    base = runner.invoke(app, ["run", "seed-never-reads", "-d", "3s", "--json", "--no-progress",
                               "-p", "linux-6.18", "-s", "net.ipv4.tcp_shrink_window=1"])
    at250 = runner.invoke(app, ["run", "seed-never-reads", "-d", "3s", "--json", "--no-progress",
                                "-p", "linux-6.18", "-s", "net.ipv4.tcp_shrink_window=1", "--hz", "250"])
    assert base.exit_code == 0 and at250.exit_code == 0, at250.output
    b, h = json.loads(base.output)["summary"], json.loads(at250.output)["summary"]
    assert "hz" not in b and h["hz"] == 250
    text = runner.invoke(app, ["run", "seed-rcvbuf32k-fill", "--no-progress", "--hz", "250"]).output
    assert "at HZ=250:" in text.splitlines()[0]


@pytest.mark.parametrize(("args", "message"), [
    (["-S", "net.ipv4.tcp_congestion_control=vegas"],
     "tcpsim: error: --sender-sysctl net.ipv4.tcp_congestion_control: 'vegas' is not available"),
    (["--sender-sysctl", "net.ipv4.tcp_nosuch=1"],
     "tcpsim: error: --sender-sysctl net.ipv4.tcp_nosuch: unknown to tcpsim"),
    (["-S", "tcp_slow_start_after_idle=2"],
     "tcpsim: error: --sender-sysctl tcp_slow_start_after_idle: must be 0 or 1, got 2"),
])
def test_sender_sysctl_errors_are_one_line(args, message):
    r = runner.invoke(app, ["run", "seed-never-reads", "-d", "10ms", "--no-progress", *args])
    assert r.exit_code == 2 and r.output.startswith(message), r.output
    assert len(r.output.strip().splitlines()) == 1


def test_sender_sysctl_file_error_names_the_file_and_table(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[writer]\nkind = "bulk"\n[reader]\nkind = "fast"\n'
                 '[sender.sysctl]\n"net.ipv4.tcp_nosuch" = 1\n')
    r = runner.invoke(app, ["run", str(f), "-d", "10ms", "--no-progress"])
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"tcpsim: error: {f}: sender.sysctl: sysctl net.ipv4.tcp_nosuch: "
                               "unknown to tcpsim"), r.output


def test_reno_is_selectable_from_the_command_line():
    runs = {cc: json.loads(runner.invoke(app, ["run", "bulk-1gbit", "-d", "300ms", "--json",
                                               "--no-progress", "-S",
                                               f"net.ipv4.tcp_congestion_control={cc}"]).output)
            for cc in ("reno", "cubic")}
    # window-limited here, but the sender's cwnd differs: HyStart ended CUBIC's slow start
    assert runs["reno"]["ss"]["snd"] != runs["cubic"]["ss"]["snd"]
    assert runs["reno"]["ss"]["rcv"] == runs["cubic"]["ss"]["rcv"]


# -- the argument parser's own refusals ---------------------------------------------------------

@pytest.mark.parametrize("args,line", [
    (["run", "--frob"], "run: no such option: --frob; see tcpsim run --help"),
    (["run", "--seeed", "3"],
     "run: no such option: --seeed (did you mean --seed?); see tcpsim run --help"),
    (["runn"], "no such command 'runn' (did you mean 'run'?); see tcpsim --help"),
    (["packetdrill"], "packetdrill: missing argument 'paths'; see tcpsim packetdrill --help"),
    (["run", "-d"], "run: option '-d' requires an argument; see tcpsim run --help"),
    (["sweep", "report", "--frob"],
     "sweep report: no such option: --frob; see tcpsim sweep report --help"),
    (["sweep", "report", "x.parquet", "--html"],
     "sweep report: option '--html' requires an argument; see tcpsim sweep report --help"),
    (["--frob"], "no such option: --frob; see tcpsim --help"),
])
def test_usage_errors_are_the_common_one_line(capsys, args, line):
    """An unknown option or command, a missing argument: one `tcpsim: error:` line naming it
    and where to look, exit 2 -- not click's usage panel."""
    from tcpsim.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.splitlines() == [f"tcpsim: error: {line}"], err


@pytest.mark.parametrize("args,names", [
    (["run", "seed-rcvbuf32k-fill", "--seed", "abc"], ["run:", "'--seed'", "integer"]),
    (["bench", "--repeat", "x"], ["bench:", "'--repeat'"]),
])
def test_bad_option_values_are_one_line(args, names):
    """A value the parser refuses (not an integer) names the command and the option, through
    the app itself too (CliRunner, as the other tests here)."""
    r = runner.invoke(app, args)
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error: "), r.output
    assert all(n in lines[0] for n in names) and "--help" in lines[0], r.output
    assert "Usage:" not in r.output and "╭" not in r.output


def test_help_and_no_arguments_still_show_the_help(capsys):
    from tcpsim.cli import main
    for args, code in ((["--help"], 0), ([], 2), (["sweep"], 2)):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        out = capsys.readouterr()
        assert exit_.value.code == code, args
        assert "Usage:" in out.out + out.err and "tcpsim: error:" not in out.err, args


def test_help_shows_no_value_after_a_flag():
    from typer.testing import CliRunner
    from tcpsim.cli import app
    for command in (["run"], ["compare"], ["sweep", "run"]):
        out = CliRunner().invoke(app, [*command, "--help"], terminal_width=160).output
        assert "--json" in out or command == ["compare"], out
        assert "<bool>" not in out, out

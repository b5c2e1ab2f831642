"""tcpsim.sweeps.study: study files -- axes, ranges, paired axes, seeds, metrics -- the two
shipped studies, and one `tcpsim: error:` line naming the file and the field."""

import subprocess
import sys
from pathlib import Path

import pytest

from tcpsim.sweeps.grid import Axis
from tcpsim.sweeps.study import StudyError, builtin_studies, expand_range, load_study

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''
[study]
scenario = "seed-rcvbuf32k-fill"
duration = "0.5s"
seeds = 2
metrics = ["peak_sk_rcvbuf", "counter.TcpExtTCPRcvCoalesce"]
x = "receiver.so_rcvbuf"

[set]
"link.rtt" = "10ms"
"reader.kind" = "periodic"

[axes]
"receiver.so_rcvbuf" = [16384, 32768]

[paired.read]
"reader.bytes" = [1, 1000]
"reader.every" = ["1ms", "2ms"]
'''


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_study_file_parses_into_axes(tmp_path):
    st = load_study(write(tmp_path, GOOD))
    assert st.scenario == "seed-rcvbuf32k-fill" and st.duration == 500_000_000
    assert st.axes == [Axis("link.rtt", ("10ms",)), Axis("reader.kind", ("periodic",)),
                       Axis("receiver.so_rcvbuf", (16384, 32768)),
                       Axis("read", ((1, "1ms"), (1000, "2ms")), keys=("reader.bytes", "reader.every")),
                       Axis("seed", (1, 2))]
    assert st.metrics == ["peak_sk_rcvbuf", "counter.TcpExtTCPRcvCoalesce"]
    assert st.x == "receiver.so_rcvbuf" and st.name == "s"


@pytest.mark.parametrize("table,values", [
    ({"range": "1ms..100ms", "steps": 3, "scale": "log"}, ("1ms", "10ms", "100ms")),
    ({"range": "5ms..80ms", "steps": 3, "scale": "log"}, ("5ms", "20ms", "80ms")),
    ({"range": "0..1000", "steps": 5}, (0, 250, 500, 750, 1000)),
    ({"range": "1..3", "steps": 5}, (1, 2, 3)),                       # integers, no repeats
    ({"range": "1ms..2ms", "steps": 3, "scale": "lin"}, ("1ms", "1.5ms", "2ms")),
    ({"range": "1ms..100ms", "steps": 4, "scale": "log"}, ("1ms", "4.642ms", "21.54ms", "100ms")),
])
def test_ranges(table, values):
    assert expand_range(table, "axes.x") == values


def test_paired_and_ranges_build_the_grid_the_cli_runs(tmp_path):
    from typer.testing import CliRunner
    from tcpsim.cli import app
    r = CliRunner().invoke(app, ["sweep", str(write(tmp_path, GOOD)), "-j", "1", "--json",
                                 "-r", str(tmp_path / "res")])
    assert r.exit_code == 0, r.output
    import json
    rows = json.loads(r.output)
    assert len(rows) == 8                                    # 1 x 2 x 2 (paired) x 2 seeds
    assert {(row["reader.bytes"], row["reader.every"]) for row in rows} == {(1, "1ms"), (1000, "2ms")}
    assert {row["link.rtt"] for row in rows} == {"10ms"} and {row["seed"] for row in rows} == {1, 2}


@pytest.mark.parametrize("text,needle", [
    ("[axes]\n\"link.rtt\" = [\"1ms\"]\n", "no [study] table"),
    ("[study]\n", "study.scenario: missing"),
    ('[study]\nscenario = "nope"\n[axes]\nseed = [1, 2]\n', "study.scenario: 'nope'"),
    ('[study]\nscenario = "seed-wscale8"\nbogus = 1\n', "study.bogus: unknown field"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"link.bogus" = [1, 2]\n', "sweep point 0 (link.bogus=1): link.bogus: unknown field"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"nothing" = [1, 2]\n', "axes.nothing: not a scenario field"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"link.rtt" = []\n', "axes.link.rtt: empty list"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"link.rtt" = { range = "1ms..1s", steps = 3 }\n',
     "axes.link.rtt.range: '1ms..1s': both ends need the same unit"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"link.rtt" = { range = "1ms..9ms", steps = 1 }\n',
     "axes.link.rtt.steps: expected an integer of at least 2"),
    ('[study]\nscenario = "seed-wscale8"\n[axes]\n"link.rtt" = { range = "1ms..9ms", steps = 3, scale = "exp" }\n',
     "axes.link.rtt.scale: expected \"lin\" or \"log\""),
    ('[study]\nscenario = "seed-wscale8"\n[paired.r]\n"reader.bytes" = [1, 2]\n"reader.every" = ["1ms"]\n',
     "paired.r: the fields need as many values each"),
    ('[study]\nscenario = "seed-wscale8"\nseeds = 0\n', "study.seeds: expected a count"),
    ('[study]\nscenario = "seed-wscale8"\n[set]\n"link.rtt" = "1ms"\n', "axes: nothing varies"),
    # a typo in [set] is named before "nothing varies" (issue 31)
    ('[study]\nscenario = "seed-wscale8"\n[set]\n"link.rtt" = "1xs"\n[axes]\n"reader.bytes" = [1]\n',
     "link.rtt"),
    ('[study]\nscenario = "seed-wscale8"\n[set]\n"link.rttt" = "1ms"\n', "link.rttt: unknown field"),
    ('[study]\nscenario = "seed-wscale8"\nmetrics = ["peak_memory"]\n[axes]\nseed = [1, 2]\n',
     "study.metrics: 'peak_memory' is neither a summary field nor counter.NAME"),
    ('[study]\nscenario = "seed-wscale8"\nduration = "soon"\n[axes]\nseed = [1, 2]\n', "study.duration"),
    ('[study]\nscenario = "seed-wscale8"\nx = "link.rtt"\n[axes]\nseed = [1, 2]\n', "study.x: 'link.rtt'"),
    ('[study]\nscenario = \n', "not valid TOML"),
])
def test_a_bad_study_is_one_error_line_naming_the_file_and_field(tmp_path, text, needle):
    path = write(tmp_path, text)
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "sweep", str(path),
                           "-r", str(tmp_path / "res")], capture_output=True, text=True, cwd=ROOT)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"tcpsim: error: {path}: "), lines[0]
    assert needle in lines[0], lines[0]


def test_a_study_whose_scenario_sits_beside_it(tmp_path):
    (tmp_path / "mine.toml").write_text((ROOT / "experiments" / "seed-wscale8.toml").read_text())
    st = load_study(write(tmp_path, '[study]\nscenario = "mine.toml"\n[axes]\nseed = [1, 2]\n'))
    assert Path(st.scenario) == tmp_path / "mine.toml"


def test_a_point_the_study_makes_invalid_names_the_file_and_the_point(tmp_path):
    path = write(tmp_path, '[study]\nscenario = "seed-wscale8"\n[axes]\n"link.rtt" = ["1ms", "soon"]\n')
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "sweep", str(path),
                           "-r", str(tmp_path / "res")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert f"{path}: sweep point 1 (link.rtt=soon)" in proc.stderr


def test_the_shipped_studies_are_valid_and_modest():
    from tcpsim.runner import RunOptions
    from tcpsim.sweeps.study import plan_sweep
    assert builtin_studies() == ["oscillating-reader", "reproducer"]
    sizes = {}
    for name in builtin_studies():
        plan = plan_sweep(name, [], RunOptions())
        sizes[name] = len(plan.points)
        assert plan.study.metrics == plan.metrics and plan.study.x
        assert plan.points[0].scenario.duration <= 60 * 10**9
    assert sizes == {"reproducer": 36, "oscillating-reader": 6}


def test_study_settings_apply_to_every_point_and_options_win(tmp_path):
    from tcpsim.runner import RunOptions
    from tcpsim.sweeps.grid import parse_axis
    from tcpsim.sweeps.study import plan_sweep
    path = write(tmp_path, '[study]\nscenario = "seed-wscale8"\nduration = "2s"\nhz = 250\n'
                           'profile = "linux-6.1"\npolicies = ["shrink-window"]\n[axes]\nseed = [1, 2]\n')
    plan = plan_sweep(str(path), [parse_axis("link.rtt=1ms,2ms")], RunOptions())
    assert len(plan.points) == 4 and plan.name == "s"
    sc = plan.points[0].scenario
    assert (sc.duration, sc.hz, sc.profile, sc.policies) == (2 * 10**9, 250, "linux-6.1", ("shrink-window",))
    sc = plan_sweep(str(path), [], RunOptions(duration=10**9, profile="linux-6.18")).points[0].scenario
    assert (sc.duration, sc.profile) == (10**9, "linux-6.18")


def test_load_study_errors_are_study_errors(tmp_path):
    with pytest.raises(StudyError, match="no such study file"):
        load_study(tmp_path / "missing.toml")


def test_the_readme_shows_the_shipped_reproducer_study():
    import re
    import tomllib
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```toml\n(\[study\].*?)```", readme, flags=re.S).group(1)
    shipped = ROOT / "experiments" / "studies" / "reproducer.toml"
    assert tomllib.loads(block) == tomllib.loads(shipped.read_text())

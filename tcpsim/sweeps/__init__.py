"""Parameter sweeps (`tcpsim sweep`): one scenario, a grid of variations, run in parallel.

    grid       axes, points, validation, content hash
    study      study files (TOML): base scenario, axes, ranges, paired axes, seeds, metrics
    execute    where points run: this process, a local pool, a Dask cluster; retries
    dataset    the results directory: a Parquet row per point, written as each finishes
    driver     one sweep: resume, run, store, count
    progress   progress on stderr (rich on a terminal, plain lines otherwise)
    table      the terminal table
    report     `tcpsim sweep report`: an offline interactive HTML page
"""

from tcpsim.sweeps.dataset import Results, read_dataset, write_results
from tcpsim.sweeps.driver import run_sweep
from tcpsim.sweeps.grid import Axis, Point, build_points, parse_axis, point_hash
from tcpsim.sweeps.table import SHOWN, table_lines

__all__ = ["Axis", "Point", "Results", "SHOWN", "build_points", "parse_axis", "point_hash",
           "read_dataset", "run_sweep", "table_lines", "write_results"]

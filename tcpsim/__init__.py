"""tcpsim: a discrete-event simulator of the Linux TCP receive path.

Layers, bottom up (nothing imports a layer above it):
    tcpsim.core       sans-IO TCP endpoint: events in, actions out
    tcpsim.policy     decision points, Profile, Patch; models/ implements them per kernel era
    tcpsim.engine     simpy scheduling, link, applications
    tcpsim.trace      trace recorder (Parquet), counters, summaries
    tcpsim.scenario   TOML scenarios -> validated Scenario
    tcpsim.api        the Python API, re-exported here (tcpsim.run, compare, sweep, ...)
    tcpsim.cli        the `tcpsim` command

tcpsim.models and tcpsim.experiments are committed symlinks to models/ and experiments/ at
the top of the repository (the files users read and copy): one real subpackage for Python,
mypy and the wheel alike (pyproject.toml maps the same directories for `pip install`).

The API loads on first use (PEP 562), so `import tcpsim` stays cheap.
"""

__version__ = "0.1.0"
__all__ = ("run compare sweep search load_trace profiles patches scenarios scenario_dict Run "
           "Comparison SweepTable ENGINES FIGURES use_static_images").split()


def __getattr__(name):
    """PEP 562: `tcpsim.run` and the rest of `__all__` import tcpsim.api on first use. No
    submodule shares a name with them (the profile catalogue is tcpsim.catalog, the sweep
    machinery tcpsim.sweeps; tcpsim.experiments is the data package of the scenario files
    that `scenarios()` lists)."""
    if name not in __all__:
        raise AttributeError(f"module 'tcpsim' has no attribute {name!r}")
    from tcpsim import api
    value = getattr(api, name)
    globals()[name] = value
    return value

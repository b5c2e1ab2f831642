"""tcpsim: a discrete-event simulator of the Linux TCP receive path.

Layers, bottom up (nothing imports a layer above it):
    tcpsim.core       sans-IO TCP endpoint: events in, actions out
    tcpsim.policy     decision points, Profile, Patch; models/ implements them per kernel era
    tcpsim.engine     simpy scheduling, link, applications
    tcpsim.trace      trace recorder (Parquet), counters, summaries
    tcpsim.scenario   TOML scenarios -> validated Scenario
    tcpsim.api        the Python API, re-exported here (tcpsim.run, compare, sweep, ...)
    tcpsim.cli        the `tcpsim` command

The API loads on first use (PEP 562), so `import tcpsim` stays cheap.
"""

import os as _os

__version__ = "0.1.0"
__all__ = ("run compare sweep load_trace profiles patches experiments scenario_dict Run "
           "Comparison ENGINES FIGURES").split()

# In a source checkout, models/ and experiments/ sit beside this package (they are the files
# users copy and edit); an install puts them inside it. Make both layouts import the same way:
# tcpsim.models.linux_6_1, tcpsim.experiments.
_here = _os.path.dirname(_os.path.realpath(__file__))
_up = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "models")) and _os.path.isdir(_os.path.join(_up, "models")):
    __path__.append(_up)  # type: ignore[name-defined]


def __getattr__(name):
    if name not in __all__:
        raise AttributeError(name)
    from tcpsim import api  # binds the submodules tcpsim.profiles and tcpsim.sweep: callable
    return globals().get(name) or getattr(api, name)

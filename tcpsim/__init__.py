"""tcpsim: a discrete-event simulator of the Linux TCP receive path.

Layers, bottom up (nothing imports a layer above it):
    tcpsim.core       sans-IO TCP endpoint: events in, actions out
    tcpsim.policy     decision points, Profile, Patch; models/ implements them per kernel era
    tcpsim.engine     simpy scheduling, link, applications
    tcpsim.trace      trace recorder (Parquet), counters, summaries
    tcpsim.scenario   TOML scenarios -> validated Scenario
    tcpsim.cli        the `tcpsim` command
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# In a source checkout, models/ and experiments/ sit beside this package (they are the files
# users copy and edit); an install puts them inside it. Make both layouts import the same way:
# tcpsim.models.linux_6_1, tcpsim.experiments.
_here = _Path(__file__).resolve().parent
if not (_here / "models").is_dir() and (_here.parent / "models").is_dir():
    __path__.append(str(_here.parent))  # type: ignore[name-defined]
    if not any(_here.glob("_native.*")):
        from tcpsim._checkout import load_installed_native

        load_installed_native(_here.parent)

# What `import tcpsim` offers, for type checkers: tcpsim/__init__.py loads these lazily.
from tcpsim.api import (ENGINES as ENGINES, FIGURES as FIGURES, Comparison as Comparison,
                        Run as Run, compare as compare, scenarios as scenarios,
                        load_trace as load_trace, patches as patches, profiles as profiles,
                        run as run, scenario_dict as scenario_dict, search as search,
                        sweep as sweep, SweepTable as SweepTable,
                        use_static_images as use_static_images)

__version__: str
__all__: list[str]

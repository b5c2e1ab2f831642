"""Kernel profiles and patches, one readable file per kernel era and per patch.

Each era file subclasses the previous era and overrides only what that kernel changed, so
reading one file tells what that release did to the receive path. Copy a file, edit a
decision point, and run it with `tcpsim run SCENARIO --policy ./my_patch.py:MyPatch`.

Installed as `tcpsim.models` (see pyproject.toml).
"""

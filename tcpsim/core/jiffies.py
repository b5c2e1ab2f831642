"""Kept for the modules that still import the tick clock from here (tcpsim/scenario.py is
another change's room): everything lives in tcpsim/core/clock.py."""

from tcpsim.core.clock import VALID_HZ, JiffyClock, parse_hz

__all__ = ["VALID_HZ", "JiffyClock", "parse_hz"]

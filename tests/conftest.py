"""pytest configuration: tests/ on sys.path so tests import `harness` and `strategies`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

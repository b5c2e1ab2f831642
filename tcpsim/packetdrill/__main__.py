"""`python -m tcpsim.packetdrill PATH...`: see command.py."""

import sys

from .command import main

sys.exit(main())

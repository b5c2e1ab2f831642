"""`python -m tcpsim.validate`: see run.py."""

import sys

from tcpsim.validate.run import main

sys.exit(main())

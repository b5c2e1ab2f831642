"""`python -m tcpsim.importers FORMAT FILE -o OUT.parquet`: see __init__.py."""

import sys

from tcpsim.importers import main

sys.exit(main())

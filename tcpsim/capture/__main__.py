"""`python -m tcpsim.capture SCENARIO.toml [--out DIR] [--duration S] [--no-bpftrace]`."""

from tcpsim.capture.capture import main

main()

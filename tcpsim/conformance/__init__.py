"""Conformance checks: hold the simulator against external oracles (packetdrill scripts, ...)."""

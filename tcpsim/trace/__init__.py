"""Traces: the recorder the core writes rows into, and readers for them."""

"""Real-kernel capture: namespaces, delay, socket programs, probes, wire, samples -> trace."""

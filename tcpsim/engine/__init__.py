"""The event engine: it schedules (tcpsim.engine.scheduler); all TCP logic is in tcpsim.core."""

"""The event engine: the only users of simpy. It schedules; all TCP logic is in tcpsim.core."""

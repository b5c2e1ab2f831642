"""The sans-IO TCP endpoint: plain state objects that take events and return actions.

Nothing in this package imports simpy, opens a file or reads a clock; time is passed in as
integer nanoseconds with every event. See socket.py for the theory of operation.
"""

"""Patches: mixins that override one or two decision points of any compatible kernel."""

"""A host of many connections: its description (scenario.py), the flows it expands to
(plan.py, populations.py) and what it reports in the kernel's vocabulary (outputs.py)."""

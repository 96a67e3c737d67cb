"""egress probe: check a role's resolved requirements from where the role runs.

plan.py      the plan of one role (pure): checks per requirement, near misses that must be denied
agent.py     runs a plan (standard library only: it runs in a minimal Python image, the Kubernetes Job's)
markdown.py  a report as Markdown
job.py       the Kubernetes Job that runs the agent in the cluster
"""

"""AWS: Network Firewall stateful rule groups (domain lists or exact Suricata rules) and security-group egress rules.

compile.py  requirements -> AwsPlan (every decision)     render.py  AwsPlan -> request bodies, the engine's rules file
plan.py     the plan's models and AWS's limits

Not yet registered in ``egress.targets.TARGETS``: its evaluator and components arrive with the next slices of issue 8.
"""
from __future__ import annotations

from .compile import compile_aws
from .plan import AwsCompileError, AwsPlan
from .render import render

NAME = "aws"

__all__ = ["NAME", "AwsCompileError", "AwsPlan", "compile_aws", "render"]

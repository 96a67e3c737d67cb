"""Stacks and requirements the AWS tests compile (shared, so every AWS test builds them the same way)."""
from __future__ import annotations

from pathlib import Path

from egress.addresses import PortRange
from egress.models import Requirement
from egress.project import open_project
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
FORMS = ["domain-list", "suricata"]


def stack(name: str, **overrides):
    """(catalog, profile, requirements) of a stack in stacks/, with profile settings overridden."""
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def dev(form: str, **overrides):
    """The dev stack enforcing kkp and openshift for nodes and seed on AWS, in ``form``."""
    return stack("dev", aws_network_firewall_rules=form, aws_roles=("nodes", "seed"), aws_platforms=("kkp", "openshift"), **overrides)


def req(destination: str, kind: str, protocol: str, ports=(443,), role="nodes", entry="kkp-crictl", sources=()) -> Requirement:
    return Requirement(role=role, destination=destination, kind=kind, protocol=protocol, ports=tuple(PortRange(p, p) for p in ports),
                       level="required", purposes=("x",), entry_ids=(entry,), citations=(), platforms=("kkp",), sources=tuple(sources))

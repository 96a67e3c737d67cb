"""egress-matrix Pulumi program: stack config -> core -> (components) -> exports.

Components for Azure Firewall, AWS and Kubernetes are added by their issues; today the program resolves the
stack's required-endpoint matrix and exports it, so `pulumi preview` shows exactly what the stack needs.
"""
from pathlib import Path

import pulumi

from egress.catalog import load_catalog
from egress.errors import EgressError
from egress.exports import allowlist_exports
from egress.profile import PROJECT, profile_from_pulumi_config
from egress.render import requirement_json
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parent
stack = pulumi.get_stack()

try:
    catalog = load_catalog(ROOT / "matrix")
    profile = profile_from_pulumi_config(pulumi.Config(PROJECT).get, stack)
    requirements = resolve(catalog, profile, f"Pulumi config of stack '{stack}'", stack)
except EgressError as exc:
    # RunError: Pulumi shows the message alone (no traceback); nothing has been registered at this point.
    raise pulumi.RunError(f"{type(exc).__name__}: {exc}") from None

pulumi.export("requirementCount", len(requirements))
pulumi.export("requirements", [requirement_json(r) for r in requirements])
# Addresses of this cluster that other teams must allow (IBM Cloud: gateway IPs, worker subnets, control plane).
pulumi.export("allowlistExports", allowlist_exports(catalog, profile))

"""The egress-matrix CrossGuard policies, one per module; ``POLICIES`` is what ``policy/__main__.py`` packs.

Importable without starting anything (only ``policy/__main__.py`` constructs the PolicyPack, which never returns),
so tests and ``egress preview`` run the same policy objects in-process.
"""
from __future__ import annotations

from . import (api_allowlist_includes_nodes, api_allowlist_not_open, aws_network_firewall_capacity, aws_security_group_quotas,
               azure_rcg_limits, azure_rcg_writes_chained, egress_least_privilege, egress_least_privilege_before_write, egress_not_open,
               egress_not_open_before_write, firewall_resources_protected, noproxy_includes_cluster_internals, own_entries_reviewed,
               proxy_credentials_secret, proxy_url_valid, required_egress_complete, required_egress_complete_before_write, trusted_ca_valid)

PACK_NAME = "egress-matrix"
MODULES = (required_egress_complete_before_write, egress_not_open_before_write, egress_least_privilege_before_write,
           required_egress_complete, egress_least_privilege, egress_not_open, api_allowlist_not_open, api_allowlist_includes_nodes,
           noproxy_includes_cluster_internals, proxy_url_valid, proxy_credentials_secret, trusted_ca_valid, azure_rcg_limits,
           azure_rcg_writes_chained, aws_security_group_quotas, aws_network_firewall_capacity, firewall_resources_protected,
           own_entries_reviewed)
POLICIES = [module.POLICY for module in MODULES]

__all__ = ["MODULES", "PACK_NAME", "POLICIES"]

"""What ``egress matrix`` prints, computed once per change of its inputs (egress/matrix_cache.py)."""
from __future__ import annotations

from typing import Any, Optional


def matrix_output(proj: Any, stack: str, fmt: str, width: Optional[int]) -> tuple[str, list[str]]:
    """What ``egress matrix`` prints on stdout in format ``fmt`` (table, json, csv, md), and the expiry warnings for stderr."""
    from . import render
    from .catalog.own import expiry_notices
    from .exports import allowlist_exports
    from .noproxy import openshift_no_proxy

    catalog, profile, reqs = proj.requirements(stack)
    extras: dict[str, Any] = {}
    if "openshift" in profile.platforms and profile.openshift_platform:
        # What OpenShift will bypass the proxy for (status.noProxy), so a firewall team sees the whole picture.
        extras["openshiftNoProxy"] = openshift_no_proxy(catalog, profile)
    exports = allowlist_exports(catalog, profile)
    if exports:
        extras["allowlistExports"] = exports
    if fmt == "json":
        text = render.requirements_json(stack, reqs, extras)
    elif fmt == "csv":
        text = render.requirements_csv(reqs)
    elif fmt == "md":
        text = render.requirements_markdown(stack, reqs)
    else:
        from .matrix_table import matrix_table

        text = matrix_table(stack, catalog, reqs, extras, width)
    return text, list(expiry_notices(catalog))

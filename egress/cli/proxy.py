"""What a proxy the stack does not own needs: ``export`` (the proxy team's list), ``noproxy`` (OpenShift's computed noProxy)."""
from __future__ import annotations

from enum import Enum
from typing import Optional

import typer
from typing_extensions import Annotated

from .app import app, ProjectOption, StackOption, ReportFormat, _format_option, _project, _err, _stack, _warn_expiry, _out, EgressError


class ProxyExportFormat(str, Enum):
    squid = "squid"
    pac = "pac"
    csv = "csv"
    json = "json"


@app.command("export")
def export_command(
    for_: Annotated[str, typer.Option("--for", help="proxy: what a corporate proxy the stack does not deploy must allow, what goes "
                                            "direct, what it must not inspect; allowlists: this cluster's addresses other teams allowlist.")],
    stack: StackOption = None,
    fmt: Annotated[ProxyExportFormat, typer.Option("--format", "-f", help="squid, pac, csv or json (--for allowlists: json only).")] = ProxyExportFormat.json,
    pac_default: Annotated[str, typer.Option("--pac-default", help="PAC: the final line for what neither noProxy nor the list names: "
                                             "proxy (as the cluster's clients do) or direct.")] = "proxy",
    project: ProjectOption = None,
) -> None:
    """Lists for other teams: --for proxy (the stack's clusterProxy and httpProxy) gives the proxy team the destinations that
    must traverse the proxy after noProxy (Squid, PAC, CSV or JSON, with URL paths and TLS-inspection exemptions), and the
    firewall team what goes direct; --for allowlists the allowlist exports of `egress matrix` as JSON."""
    import json

    if for_ not in ("proxy", "allowlists"):
        raise EgressError(f"--for '{for_}' is not a list egress export writes. Fix: use --for proxy (a corporate proxy's allowlist) or "
                          "--for allowlists (this cluster's addresses for other teams' allowlists)")
    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    if for_ == "allowlists":
        if fmt is not ProxyExportFormat.json:
            raise EgressError(f"--for allowlists has no --format {fmt.value}. Fix: use --format json")
        from ..exports import allowlist_exports

        _out(json.dumps(allowlist_exports(catalog, profile), indent=2) + "\n")
        return
    from ..proxy_export import proxy_export, to_csv, to_json
    from ..proxy_export_pac import pac_file
    from ..proxy_export_squid import squid_fragment

    export = proxy_export(catalog, profile, reqs, str(proj.stack_file(stack).relative_to(proj.root)))
    if fmt is ProxyExportFormat.squid:
        roles = {r.role for r in export.traverse}
        _out(squid_fragment(export, catalog, {role: profile.role_sources(role) for role in roles}))
    elif fmt is ProxyExportFormat.pac:
        _out(pac_file(export, pac_default))
    elif fmt is ProxyExportFormat.csv:
        _out(to_csv(export))
    else:
        _out(to_json(export))


# install-config platform names -> the Infrastructure platform type the operator keys on
_PLATFORM_TYPES = {"aws": "AWS", "gcp": "GCP", "azure": "Azure", "openstack": "OpenStack", "vsphere": "VSphere", "baremetal": "BareMetal",
                   "none": "None", "nutanix": "Nutanix", "ovirt": "oVirt", "ibmcloud": "IBMCloud", "powervs": "PowerVS", "external": "External"}


@app.command("noproxy")
def noproxy_command(
    platform: Annotated[Optional[str], typer.Option("--platform", help="Infrastructure platform type (AWS, GCP, Azure, OpenStack, VSphere, ... or the install-config name).")] = None,
    region: Annotated[str, typer.Option("--region", help="AWS region (platformStatus.aws.region).")] = "",
    cluster_name: Annotated[str, typer.Option("--cluster-name", help="Cluster name: the internal API host is api-int.<name>.<base domain>.")] = "",
    base_domain: Annotated[str, typer.Option("--base-domain", help="Base domain.")] = "",
    service_network: Annotated[Optional[list[str]], typer.Option("--service-network", help="Service network CIDR (repeatable).")] = None,
    cluster_network: Annotated[Optional[list[str]], typer.Option("--cluster-network", help="Cluster (pod) network CIDR (repeatable).")] = None,
    machine_network: Annotated[Optional[list[str]], typer.Option("--machine-network", help="Machine network CIDR (repeatable).")] = None,
    no_proxy: Annotated[str, typer.Option("--no-proxy", help="Proxy spec.noProxy, as written.")] = "",
    http_proxy: Annotated[str, typer.Option("--http-proxy", help="Proxy spec.httpProxy.")] = "",
    https_proxy: Annotated[str, typer.Option("--https-proxy", help="Proxy spec.httpsProxy.")] = "",
    azure_cloud_name: Annotated[str, typer.Option("--azure-cloud-name", help="platformStatus.azure.cloudName (Azure).")] = "",
    fmt: Annotated[ReportFormat, _format_option('{"noProxy": the string, "entries": its comma-separated entries}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Print the status.noProxy OpenShift's network operator computes for a Proxy (last line of output), after its own
    validation: an invalid Proxy exits 1 with the operator's message."""
    from ..noproxy import NoProxyInputs, merge_no_proxy
    from ..targets.kubernetes.openshift_checks import ProxyValidationError, degraded_message, validate_proxy_spec

    note = _err()
    if http_proxy or https_proxy or no_proxy:
        try:
            validate_proxy_spec(http_proxy, https_proxy, no_proxy)
        except ProxyValidationError as exc:
            raise EgressError(degraded_message(str(exc))) from None
    if (http_proxy or https_proxy) and no_proxy != "*":
        if not cluster_name or not base_domain:
            raise EgressError("internal api server url missing from infrastructure config 'cluster'. Fix: pass --cluster-name and --base-domain")
        if not service_network:
            note.print("note: no --service-network given; a running cluster's network status always has one")
        if not cluster_network:
            note.print("note: no --cluster-network given; a running cluster's network status always has one")
    platform_type = _PLATFORM_TYPES.get((platform or "").lower(), platform) if platform else None
    if platform_type == "AWS" and not region:
        note.print("note: no --region: the operator would add '..compute.internal' for an empty AWS region")
    facts = NoProxyInputs(platform=platform_type, aws_region=region, azure_cloud_name=azure_cloud_name,
                          api_internal_host=f"api-int.{cluster_name}.{base_domain}" if cluster_name and base_domain else "",
                          machine_networks=tuple(machine_network or ()), service_networks=tuple(service_network or ()),
                          cluster_networks=tuple(cluster_network or ()))
    merged = merge_no_proxy(_project(project).catalog(), facts, http_proxy, https_proxy, no_proxy)
    if fmt is ReportFormat.json:
        from ..json_out import dump

        _out(dump({"noProxy": merged, "entries": [e for e in merged.split(",") if e]}))
    else:
        _out(merged + "\n")

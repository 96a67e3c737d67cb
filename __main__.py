"""egress-matrix Pulumi program: stack config -> core -> components -> exports.

The stack's required-endpoint matrix is resolved, exported, and compiled for each enforcement target the stack
lists in `egress-matrix:targets` (azure, aws, kubernetes).
"""
from pathlib import Path

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env

from egress.catalog import load_catalog
from egress.catalog.own import expiry_notices, stack_catalog
from egress.errors import EgressError
from egress.guard import check_breadth
from egress.exports import allowlist_exports
from egress.profile import PROJECT, SECRET_KEYS, profile_from_pulumi_config
from egress.render import requirement_json
from egress.resolve import resolve
from egress.targets import target

ROOT = Path(__file__).resolve().parent
stack = pulumi.get_stack()

try:
    config = pulumi.Config(PROJECT)
    # Secret settings never enter the Profile: it only learns which are set; their values stay secret Outputs.
    secrets = {key: config.get_secret(key) for key in SECRET_KEYS}
    # Every key the engine passed, so a misspelt one (egress-matrix:NodeSources) is refused rather than ignored.
    keys = set(CONFIG.get()) | set(get_config_env())
    profile = profile_from_pulumi_config(config.get, stack, keys=keys).with_secrets(key for key, value in secrets.items() if value is not None)
    # The vendor matrix plus the stack's own catalogs (its entries, registries and the catalogs it lists).
    catalog = stack_catalog(load_catalog(ROOT / "matrix"), profile, ROOT, f"Pulumi config of stack '{stack}'", stack)
    requirements = resolve(catalog, profile, f"Pulumi config of stack '{stack}'", stack)
    # The stack-wide breadth check, as Project.requirements runs it for every command: the requirements and allowlistExports
    # outputs hand on all of them, not only what a target enforces (a cluster-proxy-only stack's compile judges no destination).
    check_breadth(catalog, profile, requirements, f"Pulumi config of stack '{stack}'")
    for notice in expiry_notices(catalog):
        pulumi.log.warn(notice)
    plans = {}
    for name in profile.targets:
        spec = target(name)
        spec.check_deploy(profile)
        plans[name] = spec.compile(catalog, profile, requirements, f"Pulumi config of stack '{stack}'")
        for note in spec.left_out(plans[name]):  # a row the stack's levels ask for that this target cannot allow
            pulumi.log.warn(f"{name}: left out (cannot be expressed): {note.requirement} [{note.level}]: {note.reason}")
except EgressError as exc:
    # RunError: Pulumi shows the message alone (no traceback); nothing has been registered at this point.
    raise pulumi.RunError(f"{type(exc).__name__}: {exc}") from None

# Firewall resources refuse replacement and deletion in the real engine unless the stack plans a migration: a policy
# pack cannot see the old state, protect can (README, "Migrations").
protect = not profile.allow_firewall_replacement
firewall_components = []  # what the probe Jobs run after (probeDeploy)

pulumi.export("requirementCount", len(requirements))
pulumi.export("requirements", [requirement_json(r) for r in requirements])
# Addresses of this cluster that other teams must allow (IBM Cloud: gateway IPs, worker subnets, control plane).
pulumi.export("allowlistExports", allowlist_exports(catalog, profile))

if "azure" in plans:
    from components.azure_firewall import AzureFirewallEgress
    from components.azure_policy_reader import policy_provider, read_existing_policy
    from components.azure_subscription import check_default_subscription
    from egress.targets.azure import fqdn_tag_members
    from egress.hub_facts import declared_hub_facts, stack_file_label
    from egress.targets.azure.policy import judge_existing_policy

    azure = plans["azure"]
    try:
        # Ids, and whether a policy is in another subscription, are decided from azureSubscriptionId: the credentials must agree.
        check_default_subscription(profile.azure_subscription_id)
    except EgressError as exc:
        raise pulumi.RunError(f"{type(exc).__name__}: Pulumi config of stack '{stack}': {exc}") from None
    provider = policy_provider("egress", azure.policy)
    if azure.policy.existing_id:
        # A shared hub policy is read and judged before anything is written to it; offline (nothing read) its declared facts.
        try:
            declared = declared_hub_facts(profile, ROOT, stack_file_label(stack), ours=[g.name for g in azure.groups])
            notes, warnings = judge_existing_policy(azure, declared, read_existing_policy(azure.policy, provider, declared), requirements,
                                                    fqdn_tag_members(catalog, requirements))
        except EgressError as exc:
            raise pulumi.RunError(f"{type(exc).__name__}: Pulumi config of stack '{stack}': {exc}") from None
        for note in notes:  # each fact and where it came from (read, declared in the stack file, an export file)
            pulumi.log.info(note)
        for warning in warnings:
            pulumi.log.warn(warning)
    firewall = AzureFirewallEgress("egress", azure, resource_group_name=profile.azure_resource_group, location=profile.location,
                                   policy_provider=provider, protect=protect)
    firewall_components.append(firewall)
    pulumi.export("azureFirewallPolicyId", firewall.policy_id)
    pulumi.export("azureRuleCollectionGroups", firewall.rule_collection_groups)
    pulumi.export("azureRuleCounts", firewall.rule_counts)
    if azure.policy.dns_proxy:
        # FQDN network rules match what the firewall resolved: the spokes must resolve through it (its DNS proxy).
        if azure.policy.firewall_private_ip:
            pulumi.export("azureVnetDnsServers", [azure.policy.firewall_private_ip])
        else:
            pulumi.log.warn("egress-matrix:azureDnsProxy is on: point the spoke VNets' DNS servers at the firewall's private IP "
                            "(set egress-matrix:azureFirewallPrivateIp to export it as azureVnetDnsServers)")

if "aws" in plans:
    from components.aws_network_firewall import AwsNetworkFirewallEgress
    from components.aws_security_groups import AwsSecurityGroupEgress

    aws_plan = plans["aws"]
    if aws_plan.policy is not None and aws_plan.policy.existing_arn:
        # The policy the groups are to run in is read and judged before anything is created.
        from components.aws_policy_reader import read_existing_policy
        from egress.targets.aws.policy import check_existing_policy

        try:
            for warning in check_existing_policy(aws_plan, read_existing_policy(aws_plan.policy.existing_arn)):
                pulumi.log.warn(warning)
        except EgressError as exc:
            raise pulumi.RunError(f"{type(exc).__name__}: Pulumi config of stack '{stack}': {exc}") from None
    for warning in aws_plan.warnings:
        pulumi.log.warn(warning)
    firewall = AwsNetworkFirewallEgress("egress-aws-firewall", aws_plan, protect=protect)
    security_groups = AwsSecurityGroupEgress("egress-aws-security-groups", aws_plan, vpc_id=profile.aws_vpc_id, protect=protect)
    firewall_components += [firewall, security_groups]
    pulumi.export("awsRuleGroupArns", firewall.rule_group_arns)
    # For a policy the stack does not create: what it must reference, in this order.
    pulumi.export("awsRuleGroupReferences", firewall.rule_group_references)
    pulumi.export("awsFirewallPolicyArn", firewall.policy_arn)
    pulumi.export("awsSecurityGroupIds", security_groups.security_group_ids)
    pulumi.export("awsDomainListBroadening", [f"{b.role} {b.target_type} {b.target}: {b.allows}" for b in aws_plan.broadening if b.allows])

if "kubernetes" in plans:
    from components.kubernetes_egress import ApiServerAllowlist, ClusterProxy, EgressProxy

    k8s_plan = plans["kubernetes"]
    if k8s_plan.egress_proxy:
        egress_proxy = EgressProxy("egress-proxy", k8s_plan.egress_proxy, protect=protect)
        firewall_components.append(egress_proxy)
        pulumi.export("egressProxyUrl", egress_proxy.url)
        pulumi.export("egressProxyNotProxied", [f"{n.requirement}: {n.reason}" for n in k8s_plan.egress_proxy.not_proxied])
    if k8s_plan.cluster_proxy:
        cluster_proxy = ClusterProxy("cluster-proxy", k8s_plan.cluster_proxy, credentials=secrets["proxyCredentials"], protect=protect)
        firewall_components.append(cluster_proxy)
        # What the operator will compute, so users see it before applying; no credentials in it.
        pulumi.export("openshiftStatusNoProxy", cluster_proxy.openshift_status_no_proxy)
        if cluster_proxy.aks_http_proxy_config is not None:
            pulumi.export("aksHttpProxyConfig", cluster_proxy.aks_http_proxy_config)
    if k8s_plan.api_allowlist:
        allowlist = ApiServerAllowlist("api-server-allowlist", k8s_plan.api_allowlist, protect=protect)
        firewall_components.append(allowlist)
        pulumi.export("apiServerEffectiveSourceRanges", allowlist.effective_source_ranges)
        for warning in k8s_plan.api_allowlist.warnings:
            pulumi.log.warn(warning)
    if k8s_plan.probe and profile.probe_deploy:
        from components.kubernetes_probe import EgressProbe

        # After every firewall resource of the stack: the probe checks what this update applied. Not awaited: read its log.
        # The Job's name carries a hash of what the firewall targets apply, so a changed firewall is a new Job (a new run).
        EgressProbe("egress-probe", k8s_plan.probe, credentials=secrets["proxyCredentials"], after=firewall_components)
        pulumi.export("probeJobs", [f"kubectl logs -n {job.namespace} job/{job.name}" for job in k8s_plan.probe])

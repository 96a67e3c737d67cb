"""GitOps and agents as vendor platforms (flux, argocd, datadog): the exact requirements each kind of stack resolves to."""
from __future__ import annotations

import pytest

from egress.errors import ResolveError
from egress.profile import Profile
from egress.resolve import resolve
from egress.targets.azure.compile import compile_azure

SITES = ["datadoghq.com", "us3.datadoghq.com", "us5.datadoghq.com", "datadoghq.eu", "ap1.datadoghq.com", "ap2.datadoghq.com", "ddog-gov.com"]
GITHUB_DOWNLOADS = {"github-releases.githubusercontent.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com"}


def profile(**values) -> Profile:
    return Profile.model_validate(values)


def keys(reqs) -> set[tuple[str, str, str, str]]:
    return {(r.role, r.destination, r.protocol, ",".join(map(str, r.ports))) for r in reqs}


def https(role: str, *hosts: str) -> set[tuple[str, str, str, str]]:
    return {(role, host, "https", "443") for host in hosts}


# ---------------------------------------------------------------------------------------------------------- datadog
def test_datadog_eu_site_resolves_exactly_the_eu_hosts(catalog):
    reqs = resolve(catalog, profile(platforms=["datadog"], datadogSite="datadoghq.eu",
                                    features=["datadog-apm", "datadog-logs", "datadog-remote-config", "datadog-process", "datadog-orchestrator"]))
    assert keys(reqs) == https("nodes", "*.agent.datadoghq.eu", "api.datadoghq.eu", "trace.agent.datadoghq.eu",
                               "instrumentation-telemetry-intake.datadoghq.eu", "agent-http-intake.logs.datadoghq.eu",
                               "config.datadoghq.eu", "process.datadoghq.eu", "orchestrator.datadoghq.eu", "contlcycle-intake.datadoghq.eu")
    by_host = {r.destination: r for r in reqs}
    assert by_host["*.agent.datadoghq.eu"].kind == "wildcard"
    assert by_host["api.datadoghq.eu"].level == "recommended"  # non-critical functionality, per the page
    assert by_host["agent-http-intake.logs.datadoghq.eu"].entry_ids == ("datadog-logs",)
    assert {r.citations[0][0] for r in reqs} == {catalog.sources["datadog-network-traffic"].cited}  # the page, by its public address


@pytest.mark.parametrize("site", SITES)
def test_every_site_gets_its_own_agent_core(catalog, site):
    reqs = resolve(catalog, profile(platforms=["datadog"], datadogSite=site))
    assert keys(reqs) == https("nodes", f"*.agent.{site}", f"api.{site}")
    assert keys(resolve(catalog, profile(platforms=["datadog"], datadogSite=site, levels=["required"]))) == https("nodes", f"*.agent.{site}")


def test_datadog_without_a_site_names_the_setting(catalog):
    with pytest.raises(ResolveError, match=r"entry 'datadog-agent-intake' \(datadog\).*\{datadog_site\} \(set egress-matrix:datadogSite\)"):
        resolve(catalog, profile(platforms=["datadog"]))


def test_datadog_registry_features_add_only_their_registry(catalog):
    base = keys(resolve(catalog, profile(platforms=["datadog"], datadogSite="datadoghq.com")))
    added = {feature: keys(resolve(catalog, profile(platforms=["datadog"], datadogSite="datadoghq.com", features=[feature]))) - base
             for feature in ("datadog-registry-gcr-eu", "datadog-registry-azure", "datadog-registry-dockerhub")}
    assert added == {
        "datadog-registry-gcr-eu": https("nodes", "eu.gcr.io"),
        "datadog-registry-azure": https("nodes", "datadoghq.azurecr.io"),
        # docker.io is only a name: the hosts a Docker Hub pull touches take its place (matrix/expansions.yaml)
        "datadog-registry-dockerhub": https("nodes", "registry-1.docker.io", "auth.docker.io", "production.cloudfront.docker.com",
                                            "production.cloudflare.docker.com"),
    }


# ------------------------------------------------------------------------------------------------------------- flux
FLUX_DEFAULT = https("nodes", "ghcr.io", "pkg-containers.githubusercontent.com", "github.com", *GITHUB_DOWNLOADS)


def test_flux_default_is_its_images_and_github_over_https(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"]))
    assert keys(reqs) == FLUX_DEFAULT
    ghcr = next(r for r in reqs if r.destination == "ghcr.io")
    assert ghcr.images == ("ghcr.io/fluxcd/source-controller", "ghcr.io/fluxcd/kustomize-controller",
                           "ghcr.io/fluxcd/helm-controller", "ghcr.io/fluxcd/notification-controller")


def test_flux_ssh_adds_port_22_to_github_only(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"], features=["flux-github-ssh"]))
    assert keys(reqs) - FLUX_DEFAULT == {("nodes", "github.com", "tcp", "22")}
    assert keys(reqs) >= FLUX_DEFAULT


def test_flux_image_automation_adds_images_not_hosts(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"], features=["flux-image-automation"]))
    assert keys(reqs) == FLUX_DEFAULT
    ghcr = next(r for r in reqs if r.destination == "ghcr.io")
    assert {"ghcr.io/fluxcd/image-reflector-controller", "ghcr.io/fluxcd/image-automation-controller"} <= set(ghcr.images)
    assert ghcr.entry_ids == ("flux-image-automation-images", "flux-images-ghcr")


def test_flux_github_api_and_notification_providers(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"], datadogSite="datadoghq.eu",
                                    features=["flux-github-api", "flux-notify-slack", "flux-notify-datadog"]))
    assert keys(reqs) - FLUX_DEFAULT == https("nodes", "api.github.com", "slack.com", "api.datadoghq.eu")
    api = next(r for r in reqs if r.destination == "api.github.com")
    assert api.entry_ids == ("flux-github-api-app", "flux-github-api-notifications")
    datadog = next(r for r in reqs if r.destination == "api.datadoghq.eu")
    assert datadog.deviations and "documented as api.datadoghq.com" in datadog.deviations[0]
    # the legacy Slack webhook is optional: only a stack that takes optional rows gets it
    everything = resolve(catalog, profile(platforms=["flux"], features=["flux-notify-slack"], levels=["required", "recommended", "optional"]))
    assert keys(everything) - FLUX_DEFAULT == https("nodes", "slack.com", "hooks.slack.com")


def test_flux_bootstrap_is_the_workstations(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"], features=["flux-bootstrap-github"]))
    assert keys(reqs) - FLUX_DEFAULT == https("workstation", "api.github.com", "github.com", *GITHUB_DOWNLOADS)
    github = next(r for r in reqs if r.role == "workstation" and r.destination == "github.com")
    assert github.paths == ("/fluxcd/flux2/releases",)


def test_flux_offline_keeps_only_the_git_source(catalog):
    reqs = resolve(catalog, profile(platforms=["flux"], features=["flux-image-automation"], offlineRegistry="registry.example.com:5000"))
    assert keys(reqs) == https("nodes", "github.com", *GITHUB_DOWNLOADS)


# ----------------------------------------------------------------------------------------------------------- argocd
ARGOCD_DEFAULT = https("nodes", "quay.io", "cdn.quay.io", "cdn01.quay.io", "cdn02.quay.io", "cdn03.quay.io", "cdn04.quay.io", "cdn05.quay.io",
                       "cdn06.quay.io", "quayio-production-s3.s3.amazonaws.com", "public.ecr.aws", "d2glxqk2uabbnd.cloudfront.net",
                       "ghcr.io", "pkg-containers.githubusercontent.com", "github.com", *GITHUB_DOWNLOADS)


def test_argocd_default_is_its_images_and_github_over_https(catalog):
    reqs = resolve(catalog, profile(platforms=["argocd"]))
    assert keys(reqs) == ARGOCD_DEFAULT
    images = {image for r in reqs for image in r.images}
    assert images == {"quay.io/argoproj/argocd", "public.ecr.aws/docker/library/redis", "ghcr.io/dexidp/dex"}


def test_argocd_features(catalog):
    ha = resolve(catalog, profile(platforms=["argocd"], features=["argocd-ha"]))
    assert keys(ha) == ARGOCD_DEFAULT  # HAProxy comes from the registry Redis already uses
    assert next(r for r in ha if r.destination == "public.ecr.aws").images == (
        "public.ecr.aws/docker/library/haproxy", "public.ecr.aws/docker/library/redis")
    more = resolve(catalog, profile(platforms=["argocd"], features=["argocd-github-ssh", "argocd-github-api"]))
    assert keys(more) - ARGOCD_DEFAULT == {("nodes", "github.com", "tcp", "22"), ("nodes", "api.github.com", "https", "443")}
    api = next(r for r in more if r.destination == "api.github.com")
    assert api.entry_ids == ("argocd-github-app-api", "argocd-notifications-github-api")


# ---------------------------------------------------------------------------------------------------- with a platform
def test_gitops_and_agent_next_to_aks_get_their_own_azure_groups(catalog):
    stack = profile(platforms=["aks", "flux", "argocd", "datadog"], cloud="azure-public", location="westeurope", datadogSite="datadoghq.eu",
                    clusterName="demo", targets=["azure"], nodeSources=["10.1.0.0/16"], azureDnsProxy=True, levels=["required"],
                    features=["datadog-logs", "flux-github-ssh"])
    plan = compile_azure(catalog, stack, resolve(catalog, stack))
    assert {name: catalog.azure_bands[name] for name in ("flux", "argocd", "datadog")} == {"flux": 4, "argocd": 5, "datadog": 6}
    assert [(g.name, g.priority) for g in plan.groups] == [
        ("egress-demo-aks", 1000), ("egress-demo-flux", 1400), ("egress-demo-argocd", 1500), ("egress-demo-datadog", 1600)]
    rules = {r.name: r for g in plan.groups[1:] for c in g.collections for r in c.rules}
    assert sorted(rules) == ["argocd-core-https", "datadog-core-https", "datadog-logs-https", "flux-core-https", "flux-github-ssh-tcp-22-fqdns"]
    assert rules["datadog-core-https"].target_fqdns == ("*.agent.datadoghq.eu",)
    assert rules["datadog-logs-https"].target_fqdns == ("agent-http-intake.logs.datadoghq.eu",)
    assert rules["flux-github-ssh-tcp-22-fqdns"].description == "egress-matrix entries: flux-github-ssh"


@pytest.mark.parametrize("site", SITES)
def test_remote_configuration_and_dbm_hosts_only_where_the_page_lists_them(catalog, site):
    """Datadog's page lists config.<site> and the Database Monitoring intakes for every site but US1-FED (ddog-gov.com)."""
    reqs = resolve(catalog, profile(platforms=["datadog"], datadogSite=site, features=["datadog-remote-config", "datadog-dbm"]))
    listed = {f"config.{site}", f"dbm-metrics-intake.{site}", f"dbquery-intake.{site}"}
    assert listed & {r.destination for r in reqs} == (set() if site == "ddog-gov.com" else listed)

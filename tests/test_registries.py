"""Private container registries (egress-matrix:containerRegistries): the hosts each type expands to, cited from the
vendor's documentation (matrix/registry-kinds.yaml), as own entries approved by the stack's team."""
from __future__ import annotations

import copy
import datetime
import random
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from egress.addresses import AddressError
from egress.catalog import read_yaml
from egress.errors import CatalogError, ResolveError
from egress.models import ENTRY_ID
from egress.registries import ContainerRegistry, check_registry_citations, check_registry_list, load_registry_kinds, registry_entries

ROOT = Path(__file__).resolve().parents[1]
KINDS_FILE = ROOT / "matrix" / "registry-kinds.yaml"
APPROVAL = {"owner": "platform-team", "reference": "OPS-1234"}


@pytest.fixture(scope="module")
def kinds():
    return load_registry_kinds(KINDS_FILE, read_yaml(KINDS_FILE))


def registry(**fields) -> ContainerRegistry:
    return ContainerRegistry.model_validate({**APPROVAL, **fields})


def hosts(kinds, *registries, cloud=None) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(e.id, e.destination, e.ports) for e in registry_entries(kinds, tuple(registries), cloud)]


# ------------------------------------------------------------------------------------------------ hosts per type
def test_acr_with_data_endpoints_in_two_regions(kinds):
    acr = registry(type="acr", name="contosoacr", regions=["westeurope", "northeurope"], dataEndpoints=True)
    assert hosts(kinds, acr) == [
        ("registries/acr-contosoacr-certificates", "azurecr.io", (443,)),
        ("registries/acr-contosoacr-data-northeurope", "contosoacr.northeurope.data.azurecr.io", (443,)),
        ("registries/acr-contosoacr-data-westeurope", "contosoacr.westeurope.data.azurecr.io", (443,)),
        ("registries/acr-contosoacr-login", "contosoacr.azurecr.io", (443,)),
    ]
    assert all(entry.broad is None for entry in registry_entries(kinds, (acr,), None))


def test_acr_without_data_endpoints_falls_back_to_every_storage_account_and_says_it_is_broader(kinds):
    acr = registry(type="acr", name="contosoacr", regions=["westeurope", "northeurope"], dataEndpoints=False)
    assert hosts(kinds, acr) == [
        ("registries/acr-contosoacr-certificates", "azurecr.io", (443,)),
        ("registries/acr-contosoacr-login", "contosoacr.azurecr.io", (443,)),
        ("registries/acr-contosoacr-storage", "*.blob.core.windows.net", (443,)),
    ]
    storage = registry_entries(kinds, (acr,), None)[-1]
    assert storage.kind == "wildcard"
    assert "covers all Azure storage accounts, not just the registry's storage" in storage.broad
    assert "dataEndpoints: true" in storage.broad
    assert (storage.citation.source, storage.citation.section) == ("registry-acr-data-endpoints", "Without dedicated data endpoints")
    assert hosts(kinds, registry(type="acr", name="contosoacr", regions=["westeurope"])) == hosts(kinds, acr)  # dataEndpoints defaults to false


def test_acr_regional_endpoints_add_one_geo_host_per_region(kinds):
    acr = registry(type="acr", name="contosoacr", regions=["westeurope", "northeurope"], dataEndpoints=True, regionalEndpoints=True)
    assert [h for h in hosts(kinds, acr) if "-geo-" in h[0]] == [
        ("registries/acr-contosoacr-geo-northeurope", "contosoacr.northeurope.geo.azurecr.io", (443,)),
        ("registries/acr-contosoacr-geo-westeurope", "contosoacr.westeurope.geo.azurecr.io", (443,)),
    ]


def test_acr_in_the_sovereign_clouds(kinds):
    china = registry(type="acr", name="contosoacr", regions=["chinanorth3"], dataEndpoints=True)
    assert hosts(kinds, china, cloud="azure-china") == [
        ("registries/acr-contosoacr-data-chinanorth3", "contosoacr.chinanorth3.data.azurecr.cn", (443,)),
        ("registries/acr-contosoacr-login", "contosoacr.azurecr.cn", (443,)),
    ]
    usgov = registry(type="acr", name="contosoacr", regions=["usgovvirginia"], cloud="azure-usgov")
    assert hosts(kinds, usgov, cloud=None) == [
        ("registries/acr-contosoacr-login", "contosoacr.azurecr.us", (443,)),
        ("registries/acr-contosoacr-storage", "*.blob.core.usgovcloudapi.net", (443,)),
    ]
    # the registry's own cloud wins over the stack's
    assert hosts(kinds, usgov, cloud="azure-china") == hosts(kinds, usgov, cloud=None)


def test_acr_regional_endpoints_where_no_document_names_them_are_refused(kinds):
    acr = registry(type="acr", name="contosoacr", regions=["usgovvirginia"], regionalEndpoints=True)
    with pytest.raises(ResolveError) as error:
        registry_entries(kinds, (acr,), "azure-usgov")
    assert str(error.value) == ("egress-matrix:containerRegistries: acr contosoacr: field 'regionalEndpoints' = true: the cited documents "
                                "give no regionalEndpoints host for azure-usgov. Fix: set regionalEndpoints: false, or list the hosts as "
                                "stack entries with your own approval")


def test_ecr(kinds):
    ecr = registry(type="ecr", account="123456789012", region="eu-central-1")
    assert hosts(kinds, ecr) == [
        ("registries/ecr-123456789012-eu-central-1-api", "api.ecr.eu-central-1.amazonaws.com", (443,)),
        ("registries/ecr-123456789012-eu-central-1-layers", "prod-eu-central-1-starport-layer-bucket.s3.eu-central-1.amazonaws.com", (443,)),
        ("registries/ecr-123456789012-eu-central-1-registry", "123456789012.dkr.ecr.eu-central-1.amazonaws.com", (443,)),
    ]


def test_gar(kinds):
    assert hosts(kinds, registry(type="gar", location="europe-west3")) == [
        ("registries/gar-europe-west3-registry", "europe-west3-docker.pkg.dev", (443,))]
    assert hosts(kinds, registry(type="gar", location="us")) == [("registries/gar-us-registry", "us-docker.pkg.dev", (443,))]


def test_ghcr_is_what_the_public_expansion_implies_with_the_same_citation(kinds):
    entries = registry_entries(kinds, (registry(type="ghcr"),), None)
    assert [(e.id, e.destination) for e in entries] == [("registries/ghcr-blobs", "pkg-containers.githubusercontent.com"),
                                                        ("registries/ghcr-registry", "ghcr.io")]
    expansion = next(x for x in read_yaml(ROOT / "matrix" / "expansions.yaml")["expansions"] if x["host"] == "ghcr.io")
    implied = {(i["destination"], i["citation"]["source"], i["citation"]["section"]) for i in expansion["implies"]}
    assert implied | {("ghcr.io", expansion["citation"]["source"], expansion["citation"]["section"])} == \
        {(e.destination, e.citation.source, e.citation.section) for e in entries}


def test_generic_registry_with_its_port_and_redirect_hosts(kinds):
    generic = registry(type="generic", host="registry.example.com:5000", redirectHosts=["blobs.example.com", "cdn.example.net:8443"])
    assert hosts(kinds, generic) == [
        ("registries/generic-registry-example-com-5000-redirect-blobs-example-com", "blobs.example.com", (443,)),
        ("registries/generic-registry-example-com-5000-redirect-cdn-example-net-8443", "cdn.example.net", (8443,)),
        ("registries/generic-registry-example-com-5000-registry", "registry.example.com", (5000,)),
    ]
    assert hosts(kinds, registry(type="generic", host="10.20.0.5")) == [("registries/generic-10-20-0-5-registry", "10.20.0.5", (443,))]
    assert [e.protocol for e in registry_entries(kinds, (generic,), None)] == ["https"] * 3


def test_every_entry_is_an_own_entry_of_the_registries_catalog(kinds):
    stack = (registry(type="acr", name="contosoacr", regions=["westeurope"], role="payments", expires="2027-03-31"),
             registry(type="ecr", account="123456789012", region="eu-central-1"))
    entries = registry_entries(kinds, stack, None)
    for entry in entries:
        assert re.fullmatch(ENTRY_ID.strip("^$"), entry.id)
        assert (entry.platform, entry.catalog, entry.level) == ("registries", "registries", "required")
        assert entry.kind in ("fqdn", "wildcard") and "{" not in entry.destination + entry.purpose + (entry.broad or "")
        assert entry.citation is not None
    acr = [e for e in entries if e.id.startswith("registries/acr-")]
    assert {(e.role, e.approval.owner, e.approval.reference, e.approval.expires) for e in acr} == \
        {("payments", "platform-team", "OPS-1234", datetime.date(2027, 3, 31))}
    assert {e.purpose.split(": ")[0] for e in acr} == {"Azure Container Registry contosoacr"}
    assert {(e.role, e.approval.expires) for e in entries if e.id.startswith("registries/ecr-")} == {("nodes", None)}


# ------------------------------------------------------------------------------------------------ determinism
def test_order_of_registries_regions_and_redirects_does_not_change_the_output(kinds):
    items = [dict(type="acr", name="contosoacr", regions=["westeurope", "northeurope", "swedencentral"], dataEndpoints=True),
             dict(type="ecr", account="123456789012", region="eu-central-1"), dict(type="gar", location="europe-west3"),
             dict(type="ghcr"), dict(type="generic", host="registry.example.com:5000", redirectHosts=["b.example.com", "a.example.com"])]
    expected = registry_entries(kinds, tuple(registry(**item) for item in items), None)
    shuffle = random.Random(19)
    for _ in range(12):
        shuffled = copy.deepcopy(items)
        shuffle.shuffle(shuffled)
        for item in shuffled:
            for key in ("regions", "redirectHosts"):
                if key in item:
                    shuffle.shuffle(item[key])
        assert registry_entries(kinds, tuple(registry(**item) for item in shuffled), None) == expected


def test_ids_derive_from_the_registry_so_adding_one_leaves_the_others_alone(kinds):
    first = registry(type="acr", name="contosoacr", regions=["westeurope"], dataEndpoints=True)
    before = {e.id: e for e in registry_entries(kinds, (first,), None)}
    after = {e.id: e for e in registry_entries(kinds, (registry(type="ghcr"), first), None)}
    assert {key: after[key] for key in before} == before
    assert sorted(set(after) - set(before)) == ["registries/ghcr-blobs", "registries/ghcr-registry"]


# ------------------------------------------------------------------------------------------------ bad stack input
def problem(raw) -> str:
    with pytest.raises(ValidationError) as info:
        ContainerRegistry.model_validate(raw)
    error = info.value.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    assert isinstance(cause, AddressError), error
    return str(cause)


@pytest.mark.parametrize("raw, message", [
    ("contosoacr", "a registry is a mapping, not str. Fix: write {type: acr, name: ..., regions: [...], owner: ..., reference: ...}"),
    ({"name": "contosoacr", **APPROVAL}, "a registry needs a type. Fix: add type: one of acr, ecr, gar, ghcr, generic"),
    ({"type": "quay", **APPROVAL}, "'quay' is not a registry type. Fix: use one of acr, ecr, gar, ghcr, generic (any other registry: "
                                   "type generic with its host)"),
    ({"type": "acr", "regions": ["westeurope"], **APPROVAL},
     "type acr needs name. Fix: add name: <registry name> (5-50 lower-case letters and digits, the part before .azurecr.io)"),
    ({"type": "acr", "name": "contosoacr", **APPROVAL},
     "type acr needs regions. Fix: add regions: [<home region>, <each geo-replica's region>], e.g. [westeurope, northeurope]"),
    ({"type": "ecr", "region": "eu-central-1", **APPROVAL},
     "type ecr needs account. Fix: add account: \"<12-digit AWS account id>\" (quoted, so YAML keeps it text)"),
    ({"type": "ecr", "account": "123456789012", **APPROVAL}, "type ecr needs region. Fix: add region: <AWS region of the registry>, e.g. eu-central-1"),
    ({"type": "gar", **APPROVAL},
     "type gar needs location. Fix: add location: <repository location>, e.g. europe-west3 (the part before -docker.pkg.dev)"),
    ({"type": "generic", **APPROVAL}, "type generic needs host. Fix: add host: <registry host[:port]>, e.g. registry.example.com:5000"),
    ({"type": "ghcr", "reference": "OPS-1"}, "type ghcr needs owner. Fix: add owner: <the team that approved the registry>"),
    ({"type": "ghcr", "owner": "platform-team"}, "type ghcr needs reference. Fix: add reference: <ticket id or URL of the approval>"),
    ({"type": "ghcr", "owner": "  ", "reference": "OPS-1"}, "owner is blank. Fix: add owner: <the team that approved the registry>"),
    ({"type": "acr", "name": "contosoacr", "regions": ["westeurope"], "account": "123456789012", **APPROVAL},
     "field 'account' is not a field of type acr. Fix: remove it; type acr takes: cloud, dataEndpoints, expires, name, owner, reference, "
     "regionalEndpoints, regions, role, type"),
    ({"type": "ghcr", "colour": "red", **APPROVAL}, "field 'colour' is not a field of type ghcr. Fix: remove it; type ghcr takes: expires, owner, "
                                                    "reference, role, type"),
    ({"type": "acr", "name": "ContosoACR", "regions": ["westeurope"], **APPROVAL},
     "name 'ContosoACR' has upper-case letters. Fix: write 'contosoacr' (the login server is lower case)"),
    ({"type": "acr", "name": "acr", "regions": ["westeurope"], **APPROVAL},
     "name 'acr' is not an ACR name. Fix: use 5-50 letters and digits, e.g. contosoacr (the part before .azurecr.io)"),
    ({"type": "acr", "name": "contoso-acr", "regions": ["westeurope"], **APPROVAL},
     "name 'contoso-acr' is not an ACR name. Fix: use 5-50 letters and digits, e.g. contosoacr (the part before .azurecr.io)"),
    ({"type": "acr", "name": "contosoacr", "regions": ["West Europe"], **APPROVAL},
     "region 'West Europe' is not an Azure location name. Fix: write it as the Azure CLI does, e.g. westeurope or northeurope"),
    ({"type": "acr", "name": "contosoacr", "regions": ["westeurope", "westeurope"], **APPROVAL},
     "region 'westeurope' is listed twice. Fix: list each region of the registry once"),
    ({"type": "acr", "name": "contosoacr", "regions": "westeurope", **APPROVAL},
     "regions 'westeurope' is not a list of text. Fix: write a list, e.g. regions: [westeurope]"),
    ({"type": "acr", "name": "contosoacr", "regions": ["westeurope"], "dataEndpoints": "yes", **APPROVAL},
     "dataEndpoints 'yes' is not true or false. Fix: write dataEndpoints: true or dataEndpoints: false"),
    ({"type": "acr", "name": "contosoacr", "regions": ["westeurope"], "cloud": "azure-germany", **APPROVAL},
     "cloud 'azure-germany' is not an Azure cloud. Fix: use one of azure-public, azure-china, azure-usgov"),
    ({"type": "ecr", "account": 123456789012, "region": "eu-central-1", **APPROVAL},
     "account 123456789012 is a number, not text. Fix: quote it: account: \"123456789012\""),
    ({"type": "ecr", "account": "12345", "region": "eu-central-1", **APPROVAL},
     "account '12345' is not an AWS account id. Fix: write the 12 digits, quoted: account: \"123456789012\""),
    ({"type": "ecr", "account": "123456789012", "region": "eu-central", **APPROVAL},
     "region 'eu-central' is not an AWS region. Fix: write e.g. eu-central-1"),
    ({"type": "ecr", "account": "123456789012", "region": "cn-north-1", **APPROVAL},
     "region 'cn-north-1' is an AWS China region, whose ECR hosts (amazonaws.com.cn) no cited document gives. Fix: list its hosts as type "
     "generic (host and redirectHosts) with your own approval"),
    ({"type": "gar", "location": "Europe-West3", **APPROVAL},
     "location 'Europe-West3' is not an Artifact Registry location. Fix: write a region such as europe-west3 or a multi-region: us, europe, asia"),
    ({"type": "generic", "host": "https://registry.example.com", **APPROVAL},
     "host 'https://registry.example.com' is not host[:port]. Fix: write the host only, e.g. registry.example.com:5000 (no scheme or path)"),
    ({"type": "generic", "host": "registry.example.com:70000", **APPROVAL},
     "host 'registry.example.com:70000' has no valid port. Fix: write host:port with a port 1-65535, or the host alone for 443"),
    ({"type": "generic", "host": "Registry.example.com", **APPROVAL},
     "host 'Registry.example.com': host names are written in lower case. Fix: write 'registry.example.com'"),
    ({"type": "generic", "host": "registry.example.com", "redirectHosts": ["blobs.example.com", "blobs.example.com"], **APPROVAL},
     "redirect host 'blobs.example.com' is listed twice. Fix: list each redirect host once"),
    ({"type": "generic", "host": "registry.example.com", "redirectHosts": ["registry.example.com"], **APPROVAL},
     "redirect host 'registry.example.com' is the registry's own host. Fix: remove it from redirectHosts"),
    ({"type": "ghcr", "expires": "31.03.2027", **APPROVAL}, "expires '31.03.2027' is not a date. Fix: write the date as YYYY-MM-DD, e.g. 2027-03-31"),
    ({"type": "ghcr", "expires": "2027-02-30", **APPROVAL}, "expires '2027-02-30' is not a date. Fix: write the date as YYYY-MM-DD, e.g. 2027-03-31"),
    ({"type": "ghcr", "role": "Payments", **APPROVAL},
     "role 'Payments' is not a role or group name. Fix: use a role (nodes, control-plane, seed, bastion, workstation) or a source group of the "
     "stack (lower-case letters, digits and inner '-')"),
])
def test_bad_registry_gets_one_clear_message(raw, message):
    assert problem(raw) == message


def test_a_registry_listed_twice_is_refused():
    same = [registry(type="acr", name="contosoacr", regions=["westeurope"]), registry(type="ghcr"),
            registry(type="acr", name="contosoacr", regions=["northeurope"])]
    with pytest.raises(AddressError) as error:
        check_registry_list(tuple(same))
    assert str(error.value) == ("items 0 and 2 are the same registry (acr contosoacr). Fix: list each registry once (give an ACR all its "
                                "regions in one item)")
    with pytest.raises(AddressError, match=r"items 0 and 1 are the same registry \(generic registry.example.com:443\)"):
        check_registry_list((registry(type="generic", host="registry.example.com"), registry(type="generic", host="registry.example.com:443")))
    assert check_registry_list(tuple(same[:2])) == tuple(same[:2])


def test_registry_entries_refuses_two_registries_with_the_same_ids(kinds):
    with pytest.raises(ResolveError, match=r"acr contosoacr: gives entry id 'registries/acr-contosoacr-\w+' twice"):
        registry_entries(kinds, (registry(type="acr", name="contosoacr", regions=["westeurope"]),) * 2, None)


# ------------------------------------------------------------------------------------------------ the data file
def test_every_citation_names_a_source_of_the_matrix(kinds):
    sources = read_yaml(ROOT / "matrix" / "sources.yaml")["sources"]
    check_registry_citations(kinds, sources, KINDS_FILE)
    assert {c.source for c in kinds.citations()} <= set(sources)
    ours = {"registry-acr-firewall", "registry-acr-data-endpoints", "registry-acr-endpoints-china", "registry-azure-cloud-suffixes",
            "registry-aro-acr-data-endpoint", "registry-ecr-registries", "registry-ecr-endpoints", "registry-ecr-vpc-endpoints",
            "registry-ecr-layer-url", "registry-gar-names", "registry-gar-private-clusters", "registry-oci-distribution"}
    assert {c.source for c in kinds.citations()} == ours | {"aks-limit-egress"}  # every source added for registries is cited
    with pytest.raises(CatalogError, match=r"kind 'acr', host 'login': field 'citation.source' = 'registry-acr-firewall': unknown source"):
        check_registry_citations(kinds, {key: value for key, value in sources.items() if key != "registry-acr-firewall"}, KINDS_FILE)


def test_every_type_a_stack_may_list_has_hosts(kinds):
    assert list(kinds.kinds) == ["acr", "ecr", "gar", "ghcr", "generic"]


def bad_data(edit) -> str:
    document = copy.deepcopy(dict(read_yaml(KINDS_FILE)))
    edit(document["kinds"])
    with pytest.raises(CatalogError) as error:
        load_registry_kinds(KINDS_FILE, document)
    return str(error.value)


def _host(kinds: dict, kind: str, host_id: str, **when) -> dict:
    return next(h for h in kinds[kind]["hosts"] if h["id"] == host_id and all(h.get("when", {}).get(k) == v for k, v in when.items()))


@pytest.mark.parametrize("edit, expected", [
    (lambda k: _host(k, "acr", "storage", clouds=["azure-public"], data_endpoints=False).pop("broad"),
     ["kind 'acr'", "hosts[3] 'storage'", "field 'broad' = None", "a wildcard host is broader than the registry", "say in broad why"]),
    (lambda k: _host(k, "gar", "registry").update(destination="{region}-docker.pkg.dev"),
     ["kind 'gar'", "hosts[0] 'registry'", "field 'destination' = '{region}-docker.pkg.dev'", "placeholder '{region}' is not filled here",
      "use one of: {location}"]),
    (lambda k: _host(k, "ecr", "registry").update(each="region"),
     ["kind 'ecr'", "hosts[0] 'registry'", "field 'each' = 'region'", "type ecr has no 'region' list", "(none: drop each)"]),
    (lambda k: _host(k, "acr", "data-{region}", clouds=["azure-public"], data_endpoints=True).update(id="data"),
     ["field 'id' = 'data'", "one host per region needs the region in its id"]),
    (lambda k: _host(k, "ecr", "api").update(when={"data_endpoints": True}),
     ["kind 'ecr'", "hosts[1] 'api'", "field 'when.data_endpoints' = True", "type ecr has no such condition"]),
    (lambda k: _host(k, "acr", "login", clouds=["azure-usgov"]).update(when={"clouds": ["azure-public"]}),
     ["kind 'acr'", "field 'hosts.id' = 'login'", "two hosts with this id can apply to the same registry"]),
    (lambda k: _host(k, "ghcr", "registry").update(colour="red"),
     ["kind 'ghcr'", "field 'hosts.0.colour' = 'red'", "unknown field", "broad, citation, destination, each, id, note, ports, protocol, purpose, when"]),
    (lambda k: _host(k, "generic", "registry").update(ports=["{redirect_port}"]),
     ["kind 'generic'", "hosts[0] 'registry'", "field 'ports[0]' = '{redirect_port}'", "not a port placeholder of this type"]),
    (lambda k: _host(k, "generic", "registry").update(destination="https://{host}"),
     ["field 'destination' = 'https://{host}'", "a registry host is a host name or IP, not a url"]),
    (lambda k: k.pop("ghcr"), ["field 'kinds'", "no hosts for registry type ghcr"]),
    (lambda k: k.update(quay=k["ghcr"]), ["kind 'quay'", "field 'kinds' = 'quay'", "not a registry type egress-matrix knows"]),
])
def test_bad_data_gets_one_clear_catalog_error(edit, expected):
    message = bad_data(edit)
    assert message.startswith(str(KINDS_FILE))
    for part in expected:
        assert part in message, message


def test_data_file_header_is_checked():
    for document, expected in [({"schema": 2, "kind": "registry-kinds", "kinds": {}}, "field 'schema' = 2: unsupported schema version"),
                               ({"schema": 1, "kind": "expansions", "kinds": {}}, "field 'kind' = 'expansions': not a registry-kinds file"),
                               ({"schema": 1, "kind": "registry-kinds", "kinds": {}, "extra": 1}, "field 'extra' = 1: unknown top-level field")]:
        with pytest.raises(CatalogError, match=re.escape(expected)):
            load_registry_kinds(KINDS_FILE, document)

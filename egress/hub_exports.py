"""The Azure CLI exports a stack lists in ``azureHubExports`` (pure): where they may be read from, and what they say.

``az network firewall policy show`` gives the policy's dnsSettings, basePolicy and ruleCollectionGroups (ids); ``az
network firewall policy rule-collection-group list`` gives each group's name, priority and ruleCollections. Both print
the ARM resource with ``properties`` flattened into the object (aaz ``client_flatten``); the unflattened REST shape is
read too.

The files run in PR previews and in the program with cloud credentials, so a path is read only inside the project
(no absolute path, no ``..`` or symlink out of it), and no error shows what a file holds: it names the position and the
field, and shows a value only when it is a boolean, a small number, or one of the resource types below (text the
program itself knows, so showing it reveals nothing but which one it is). Anything else is described ("a string").
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .errors import InputError
from .json_file import NotJSON, parse_json

SHOW = "az network firewall policy show --resource-group <rg> --name <policy> -o json"
LIST = "az network firewall policy rule-collection-group list --resource-group <rg> --policy-name <policy> -o json"
_POLICY_TYPE = "microsoft.network/firewallpolicies"
_GROUP_TYPE = "microsoft.network/firewallpolicies/rulecollectiongroups"
_TYPES = {t.lower(): t for t in ("Microsoft.Network/FirewallPolicies", "Microsoft.Network/FirewallPolicies/RuleCollectionGroups",
                                  "Microsoft.Network/azureFirewalls", "Microsoft.Network/ipGroups", "Microsoft.Network/virtualNetworks")}
# Server-set fields every GET of a policy returns: their absence means a projection (--query) or an edited file.
_FULL_SHOW = ("etag", "provisioningState")


class HubFactsError(InputError):
    """An export file or hub declaration that cannot be used (names the file, the field, the value and the fix)."""


def described(value: Any) -> Any:
    """What an error may show of a value read from an export: booleans, null, numbers below a million, and the fixed
    resource types as they are; anything else only by its kind (a string could be a token, a path, a key)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and abs(value) < 1_000_000:
        return value
    if isinstance(value, str) and value.lower() in _TYPES:
        return _TYPES[value.lower()]
    kind = ("a string" if isinstance(value, str) else f"a list of {len(value)} item(s)" if isinstance(value, list)
            else "an object" if isinstance(value, dict) else "a number")
    return f"({kind}, not shown)"


@dataclass(frozen=True)
class Show:
    policy_id: str
    dns_proxy: Optional[bool]  # None: a partial export (no dnsSettings, not the whole `show`)
    base_policy_id: Optional[str]  # the parent's id, "none", or None (partial export)
    group_names: Optional[frozenset[str]]  # None: the export does not list them


@dataclass(frozen=True)
class Groups:
    policy_id: str
    bodies: tuple[dict[str, Any], ...]  # {"name", "properties": {"priority", "ruleCollections"}}, in the file's order


def _props(item: dict[str, Any]) -> dict[str, Any]:
    nested = item.get("properties")
    return {**item, **nested} if isinstance(nested, dict) else item


def _is_policy_id(value: Any) -> bool:
    return isinstance(value, str) and "/firewallpolicies/" in value.lower()


def _parse_show(data: dict[str, Any], label: str, no_base: str) -> Show:
    item = _props(data)
    policy_id = item.get("id")
    if not _is_policy_id(policy_id):
        raise HubFactsError(label, "", "id", described(policy_id), "not a Firewall Policy's resource id",
                            f"write the JSON that `{SHOW}` prints, unedited")
    dns = item.get("dnsSettings")
    if dns is not None and not isinstance(dns, dict):
        raise HubFactsError(label, "", "dnsSettings", described(dns), "not an object", f"export it again with `{SHOW}`")
    enable = (dns or {}).get("enableProxy")
    if enable is not None and not isinstance(enable, bool):
        raise HubFactsError(label, "", "dnsSettings.enableProxy", described(enable), "not true or false", f"export it again with `{SHOW}`")
    base = item.get("basePolicy")
    base_id = base.get("id") if isinstance(base, dict) else base
    if base_id is not None and not _is_policy_id(base_id):
        raise HubFactsError(label, "", "basePolicy.id", described(base_id), "not a Firewall Policy's resource id", f"export it again with `{SHOW}`")
    refs = item.get("ruleCollectionGroups")
    names = None
    if refs is not None:
        if not isinstance(refs, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in refs):
            raise HubFactsError(label, "", "ruleCollectionGroups", described(refs), "not a list of {id: <group resource id>}",
                                f"export it again with `{SHOW}`")
        names = frozenset(r["id"].rstrip("/").rsplit("/", 1)[-1] for r in refs)
    # The whole `show` (its server-set fields there) leaves out what is not set: no dnsSettings or enableProxy is the
    # proxy off, no basePolicy is none (Azure's defaults, as a read says). A projection (--query) or a trimmed file
    # leaves them unknown: its silence is not the policy's.
    full = all(key in item for key in _FULL_SHOW)
    dns_proxy = enable if enable is not None else (False if full else None)
    return Show(policy_id, dns_proxy, base_id or (no_base if full else None), names)


def _parse_groups(data: list[Any], label: str) -> Groups:
    if not data:
        raise HubFactsError(label, "", "(document)", [], "an empty list does not say which policy it is of",
                            "leave it out; for a policy without groups declare egress-matrix:azureHubGroups: []")
    policies, bodies = set(), []
    for index, raw in enumerate(data):
        where = f"group {index + 1}"  # a position, never the name: the file's text is not shown
        if not isinstance(raw, dict):
            raise HubFactsError(label, where, "(group)", described(raw), "not an object", f"write the JSON that `{LIST}` prints, unedited")
        item = _props(raw)
        group_id, name, priority, collections = item.get("id"), item.get("name"), item.get("priority"), item.get("ruleCollections")
        if not isinstance(group_id, str) or "/rulecollectiongroups/" not in group_id.lower():
            raise HubFactsError(label, where, "id", described(group_id), "not a rule collection group's resource id",
                                f"write the JSON that `{LIST}` prints, unedited")
        if not isinstance(name, str) or not name:
            raise HubFactsError(label, where, "name", described(name), "not a group name", f"export it again with `{LIST}`")
        if isinstance(priority, bool) or not isinstance(priority, int) or not 100 <= priority <= 65000:
            raise HubFactsError(label, where, "priority", described(priority), "not a rule collection group priority (an integer 100-65000)",
                                f"export it again with `{LIST}`")
        if not isinstance(collections, list) or not all(isinstance(c, dict) for c in collections):
            raise HubFactsError(label, where, "ruleCollections", described(collections), "not a list of rule collections",
                                f"export it again with `{LIST}`")
        policies.add(group_id[:group_id.lower().rindex("/rulecollectiongroups/")].lower())
        bodies.append({"name": name, "properties": {"priority": priority, "ruleCollections": collections}})
    if len(policies) > 1:
        raise HubFactsError(label, "", "id", f"({len(policies)} policies, not shown)", "groups of more than one policy in one file",
                            "export each policy's groups to its own file")
    first = _props(data[0])["id"]
    return Groups(first[:first.lower().rindex("/rulecollectiongroups/")], tuple(bodies))


def export_path(root: Path, name: str, stack_file: str) -> Path:
    """The file ``name`` (a value of azureHubExports) names, refused unless it is a regular file inside the project."""
    fix = ("copy the export into the project (e.g. hub/policy.json) and list its path relative to the project root in "
           "egress-matrix:azureHubExports")
    if Path(name).is_absolute() or name.startswith("~"):
        raise HubFactsError(stack_file, "", "egress-matrix:azureHubExports", name, "an absolute path: exports are read only from inside "
                            "the project", fix)
    top = root.resolve()
    path = (top / name).resolve()  # follows every symlink: one pointing out of the project is refused as a path with '..' is
    if not path.is_relative_to(top):
        raise HubFactsError(stack_file, "", "egress-matrix:azureHubExports", name, "leads out of the project (through '..' or a "
                            "symbolic link): exports are read only from inside it", fix)
    if path.exists() and not path.is_file():
        raise HubFactsError(stack_file, "", "egress-matrix:azureHubExports", name, "not a regular file", fix)
    return path


def load_export(path: Path, label: str, no_base: str) -> Show | Groups:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HubFactsError(label, "", "(file)", label, "no such file",
                            f"export the policy with `{SHOW}` (and its groups with `{LIST}`) to that path, or correct "
                            "egress-matrix:azureHubExports") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HubFactsError(label, "", "(file)", label, f"cannot be read ({exc.__class__.__name__})", "write it as UTF-8 JSON") from None
    try:
        data = parse_json(text)
    except NotJSON as exc:
        raise HubFactsError(label, exc.where(), "(document)", "(not shown)", exc.reason,
                            f"write the output of `{SHOW}` or `{LIST}`, unedited") from None
    if isinstance(data, list):
        return _parse_groups(data, label)
    if isinstance(data, dict):
        kind = data.get("type")
        if isinstance(kind, str) and kind.lower() == _GROUP_TYPE:
            raise HubFactsError(label, "", "type", described(kind), "one rule collection group (the output of `show`), not the list",
                                f"export them all with `{LIST}`")
        if kind is not None and not (isinstance(kind, str) and kind.lower() == _POLICY_TYPE):
            raise HubFactsError(label, "", "type", described(kind), "not a Firewall Policy", f"write the output of `{SHOW}` or `{LIST}`")
        return _parse_show(data, label, no_base)
    raise HubFactsError(label, "", "(document)", described(data), "neither a policy (an object) nor a list of rule collection groups",
                        f"write the output of `{SHOW}` or `{LIST}`, unedited")

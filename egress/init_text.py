"""The text of the stack file ``egress init`` writes: every setting with a comment saying what it is (its description in
egress/profile.py) and where its value comes from, the platforms' features listed for turning on, and the settings to
fill later as commented lines. Deterministic: the same answers give the same bytes."""
from __future__ import annotations

import json
import re
import textwrap
from typing import TYPE_CHECKING, Any

from .init_templates import CLUSTER_PROXY, LATER, OPENSHIFT_PLATFORM_ASKS, PLATFORM_ASKS, TARGET_LATER, Later
from .models import Catalog
from .profile import PROJECT, declared_settings

if TYPE_CHECKING:
    from .init import Answers

WIDTH = 118
_PLAIN = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._/:@+-]*")
_YAML11 = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "none", "~"}  # words some reader takes for a boolean or null


def scalar(value: Any) -> str:
    """A value as the stack files write it: plain where no reader could take it for something else, else JSON-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML11 and not re.fullmatch(r"[0-9.+-]+|0x[0-9a-fA-F]+", text) \
            and ": " not in text and not text.endswith(":"):
        return text
    return json.dumps(text)


def comment(text: str, indent: str = "  ", hang: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"{indent}# ", subsequent_indent=f"{indent}# {hang}", break_on_hyphens=False,
                         break_long_words=False)


class _Lines:
    def __init__(self, values: dict[str, Any]):
        self.values, self.lines, self.done, self.later = values, [], set(), []
        self.declared = declared_settings()

    def setting(self, key: str, origin: str = "", value: Any = None) -> None:
        """The setting's line under its description and origin, once; nothing when it has no value."""
        value = self.values.get(key) if value is None else value
        if key in self.done or value in (None, "", [], ()):
            return
        self.done.add(key)
        why = self.declared[key]["description"]
        self.lines += comment(f"{why} From: {origin}." if origin else why)
        self.lines.append(f"  {PROJECT}:{key}: {scalar(value)}")

    def fill_later(self, later: Later) -> None:
        if later.key in self.done or later.key in self.values:
            self.setting(later.key, later.origin)
            return
        self.done.add(later.key)
        self.later.append(later.key)
        self.lines += comment(f"To fill: {self.declared[later.key]['description']} From: {later.origin}.")
        self.lines.append(f"  # {PROJECT}:{later.key}: {later.sample}")


def stack_text(catalog: Catalog, answers: "Answers", features: dict[str, list[str]]) -> tuple[str, tuple[str, ...]]:
    """(the file's text, the settings left to fill as commented lines)."""
    values = answers.values
    out = _Lines(values)
    titles = "; ".join(catalog.platforms[p] for p in answers.platforms)
    head = [f"Stack '{answers.stack}': {titles}. Written by egress init: each setting says what it is and where its value comes "
            f"from; the commented settings are for later (uncomment and fill them), then check with: egress preview --stack "
            f"{answers.stack}"]
    out.setting("platforms", "", answers.platforms)
    for platform in answers.platforms:
        for ask in PLATFORM_ASKS.get(platform, ()):
            origin = ask.origin + (f" (default {ask.default}, as init chose it)" if values.get(ask.key) == ask.default else "")
            out.setting(ask.key, origin)
    if values.get("openshiftPlatform") in OPENSHIFT_PLATFORM_ASKS:
        ask = OPENSHIFT_PLATFORM_ASKS[values["openshiftPlatform"]]
        out.setting(ask.key, ask.origin)
    out.setting("awsRegion", "the region of the cluster's AWS account and VPC")
    out.setting("clusterName", "the stack name unless --cluster-name gave one; renaming it later renames (replaces) the firewall resources")
    if answers.platforms == ["openshift"] and "nodeOs" not in values:
        out.setting("nodeOs", "OpenShift's nodes run Red Hat Enterprise Linux CoreOS", ["rhcos"])
    _features(out, catalog, answers, features)
    out.setting("nodeSources", "the nodes' subnet")
    for platform in answers.platforms:
        for later in LATER.get(platform, ()):
            out.fill_later(later)
    _targets(out, answers)
    rest = [key for key in values if key not in out.done]
    if rest:
        out.lines.append("  # Given with --set:")
        for key in rest:
            out.setting(key)
    text = "\n".join([*textwrap.wrap(head[0], WIDTH, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False),
                      "config:", *out.lines]) + "\n"
    return text, tuple(out.later)


def _features(out: _Lines, catalog: Catalog, answers: "Answers", features: dict[str, list[str]]) -> None:
    offered = [(platform, name) for platform, names in features.items() for name in names]
    if offered:
        out.lines += comment("The platforms' features (docs/MATRIX.md); add a name to egress-matrix:features to turn it on:")
        for platform, name in offered:
            out.lines += comment(f"  {name} ({platform}): {catalog.features.get(name, '')}", hang="    ")
    if answers.features:
        out.setting("features", "the add-ons the cluster runs", answers.features)
    else:
        out.done.add("features")
        out.lines.append(f"  # {PROJECT}:features: [<feature>, ...]")


def _targets(out: _Lines, answers: "Answers") -> None:
    values, targets = answers.values, answers.targets
    if not targets:
        out.done.add("targets")
        out.lines += comment("No enforcement target yet: the stack is matrix-only (egress matrix, egress export). To deploy, list "
                             "azure (Azure Firewall Policy), aws (AWS Network Firewall and security groups) or kubernetes (proxy "
                             "settings, in-cluster egress proxy): egress init --force with --target, or edit this line.")
        out.lines.append(f"  # {PROJECT}:targets: [azure]")
        return
    out.setting("targets", "egress init --target", targets)
    if "azure" in targets:
        out.setting("location", "the location of the resource group")
        out.setting("azureResourceGroup", "an existing resource group (az group list)")
        out.setting("azureSubscriptionId", "az account show --query id")
        out.setting("azurePolicyId", "the hub team (az network firewall-policy show --query id)")
        out.setting("azurePriorityBase", answers.band_note)
    if "aws" in targets and values.get("awsRegion"):
        out.lines += comment("The AWS provider's region: the rule groups and security groups are created there.")
        out.lines.append(f"  aws:region: {scalar(values['awsRegion'])}")
    if "kubernetes" in targets and values.get("httpProxy"):
        out.setting("httpProxy", "the proxy team; its credentials, if any: pulumi config set --secret egress-matrix:proxyCredentials "
                                 "'user:password'")
        out.setting("noProxy", "vCenter is reached directly: OpenShift's vSphere install docs ask for it in the Proxy's noProxy"
                    if values.get("openshiftPlatform") == "VSphere" else "")
        if "clusterProxy" not in values:
            kinds = [CLUSTER_PROXY[p] for p in answers.platforms if p in CLUSTER_PROXY] or ["kubeadm"]
            out.setting("clusterProxy", "the platforms' own proxy settings (egress init chose them from the platforms)", kinds)
    for target in targets:
        for later in TARGET_LATER.get(target, ()):
            out.fill_later(later)

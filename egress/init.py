"""``egress init``: a commented stack file for a platform from a few answers, validated before it is left in place (pure
but for the file it writes).

Answers come from options (or, in a terminal, questions the CLI asks through ``ask``). The draft is read back the way
every command reads a stack (egress/profile.py, then the stack's catalog, resolution and each target's compile), in a
throw-away copy of the project, so a file init leaves behind is one ``egress preview`` accepts. A stack on an existing
Azure Firewall Policy gets a priority band no other stack in stacks/ uses there (egress/fleet.py). An existing stack file
is never replaced unless asked (--force), and then the replaced text is shown as a diff (secrets hidden: egress/stack_shown.py).
"""
from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, get_args

from .addresses import AddressError, parse_cidr
from .errors import EgressError
from .init_templates import OPENSHIFT_PLATFORM_ASKS, PLATFORM_ASKS, Ask, flag_for
from .init_text import stack_text
from .models import CLOUD_VARIANTS, Catalog, OpenShiftPlatform
from .profile import CLUSTER_NAME_PATTERN, PROJECT, SECRET_KEYS, declared_settings
from .project import Project
from .spellings import azure_location, openshift_platform
from .stack_shown import shown_stack_text
from .suggest import closest, did_you_mean

TARGET_NAMES = ("azure", "aws", "kubernetes")
# `az cloud list` names -> the cloud variants of the matrix
_AZ_CLOUDS = {"azurecloud": "azure-public", "azurechinacloud": "azure-china", "azureusgovernment": "azure-usgov"}
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # Pulumi's stack name characters
_NEEDED = re.compile(rf"\b{PROJECT}:([A-Za-z]+)")  # the settings a refusal names


class InitError(EgressError):
    """An answer egress init cannot use, or a stack file it will not write."""


@dataclass
class Answers:
    stack: Optional[str] = None
    platforms: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # stack setting -> value (options and --set)
    force: bool = False
    band_note: str = ""  # how init chose azurePriorityBase, for the file's comment


@dataclass(frozen=True)
class Written:
    path: Path
    later: tuple[str, ...]  # settings left as commented lines to fill
    replaced: str  # with --force: the diff of the file it replaced


Asker = Callable[[Ask], str]


def parse_sets(items: list[str], where: str) -> dict[str, Any]:
    """--set KEY=VALUE options: a stack setting (did-you-mean) and its value in YAML (e.g. [a, b], true, 3000)."""
    import yaml

    known = declared_settings()
    values: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.removeprefix(f"{PROJECT}:")
        if not sep or not key:
            raise InitError(f"{where}: --set '{item}': not KEY=VALUE. Fix: write e.g. --set datadogSite=datadoghq.eu")
        secret = key if key in SECRET_KEYS else closest(key, SECRET_KEYS) if key not in known else None
        if secret:  # 'proxy_credentials' is proxyCredentials: a secret, whatever the spelling
            raise InitError(f"{where}: --set '{key}=(hidden)': {secret} is a secret and never sits in a stack file. "
                            f"Fix: after init, run: pulumi config set --secret {PROJECT}:{secret} '<value>'")
        if key not in known:
            raise InitError(f"{where}: --set '{key}': not a stack setting. Fix: {_did_you_mean(key, known)}")
        try:
            values[key] = yaml.safe_load(text) if text.strip() else text
        except yaml.YAMLError:
            values[key] = text  # not YAML: the text itself, checked with the rest of the file
    return values


def check_answers(catalog: Catalog, answers: Answers, where: str) -> None:
    """Normalise the answers given so far to the settings' spellings; a wrong one is one error naming its option."""
    platforms = []
    for name in answers.platforms:
        if name not in catalog.platforms:
            raise InitError(f"{where}: --platform '{name}': not a platform of the matrix (matrix/*.yaml). "
                            f"Fix: {_did_you_mean(name, catalog.platforms)}")
        platforms.append(name)
    answers.platforms = list(dict.fromkeys(platforms))
    offered = features_of(catalog, answers.platforms)
    for name in answers.features:
        if name not in catalog.features:
            choices = [f for fs in offered.values() for f in fs] or list(catalog.features)
            raise InitError(f"{where}: --feature '{name}': not a feature of {', '.join(answers.platforms) or 'the matrix'}. "
                            f"Fix: {_did_you_mean(name, choices)}")
    for name in answers.targets:
        if name not in TARGET_NAMES:
            raise InitError(f"{where}: --target '{name}': not an enforcement target. Fix: {_did_you_mean(name, TARGET_NAMES)}")
    answers.targets = list(dict.fromkeys(answers.targets))
    values = answers.values
    if "cloud" in values:
        values["cloud"] = _cloud(str(values["cloud"]), where)
    if "location" in values:
        values["location"] = _location(catalog, str(values["location"]), values.get("cloud") or "azure-public", where)
    if "openshiftPlatform" in values:
        values["openshiftPlatform"] = _openshift_platform(str(values["openshiftPlatform"]), where)
    if "nodeSources" in values:
        for cidr in values["nodeSources"]:
            try:
                parse_cidr(cidr)
            except AddressError as exc:
                raise InitError(f"{where}: --node-sources '{cidr}': {exc.problem}. Fix: {exc.fix}") from None
    name = values.get("clusterName")
    if name is not None and not re.fullmatch(CLUSTER_NAME_PATTERN, str(name)):
        raise InitError(f"{where}: --cluster-name '{name}': not a name every target's resources can carry. Fix: use lower-case "
                        "letters, digits and '-', 1-40 characters, starting and ending with a letter or digit")


def required(answers: Answers) -> list[Ask]:
    """What the stack cannot do without and is not answered yet, in the order init asks."""
    asks: list[Ask] = []
    for platform in answers.platforms:
        asks += PLATFORM_ASKS.get(platform, ())
    if "openshift" in answers.platforms and answers.values.get("openshiftPlatform") in OPENSHIFT_PLATFORM_ASKS:
        asks.append(OPENSHIFT_PLATFORM_ASKS[answers.values["openshiftPlatform"]])
    targets = answers.targets
    if "azure" in targets:
        asks.append(Ask("location", "--location", "Azure location of the firewall policy (e.g. westeurope)", "az group show --query location"))
        asks.append(Ask("azureResourceGroup", "--resource-group", "Azure resource group for the policy and IP Groups",
                        "an existing resource group of the spoke (az group list)"))
        asks.append(Ask("azureSubscriptionId", "--subscription-id", "Azure subscription id of that resource group",
                        "az account show --query id"))
    if "azure" in targets or "aws" in targets:
        asks.append(Ask("nodeSources", "--node-sources", "CIDR(s) of the nodes' subnet (comma-separated)",
                        "the node subnet (az network vnet subnet show / aws ec2 describe-subnets)", listed=True))
    if "aws" in targets and "ibm-vpc" not in answers.platforms:
        asks.append(Ask("awsRegion", "--region", "AWS region (e.g. eu-central-1)", "the region of the cluster's VPC"))
    if "kubernetes" in targets and "openshift" in answers.platforms:  # the operator's status.noProxy holds them
        asks.append(Ask("serviceCidrs", "--set serviceCidrs=[<CIDR>]", "Service network CIDR(s) (install-config networking.serviceNetwork)",
                        "install-config.yaml networking.serviceNetwork", listed=True))
        asks.append(Ask("podCidrs", "--set podCidrs=[<CIDR>]", "Cluster network CIDR(s) (install-config networking.clusterNetwork[].cidr)",
                        "install-config.yaml networking.clusterNetwork[].cidr", listed=True))
    if "kubernetes" in targets and not any(answers.values.get(k) for k in ("egressProxy", "clusterProxy", "apiServerAllowlist", "probeJob")):
        asks.append(Ask("httpProxy", "--http-proxy", "URL of the corporate proxy (e.g. http://proxy.example.com:3128)",
                        "the proxy team; credentials go in the secret proxyCredentials, never in the URL"))
    seen, out = set(), []
    for ask in asks:
        if ask.key not in seen and answers.values.get(ask.key) in (None, "", []):
            seen.add(ask.key)
            out.append(ask)
    return out


def fill(answers: Answers, asks: list[Ask], ask: Optional[Asker], where: str) -> None:
    """Ask each question (a terminal), or fail once naming every option still needed."""
    if ask is None:
        todo = [a for a in asks if a.default is None]
        if todo:
            raise InitError(f"{where}: {_needs(todo)} not answered (no questions with --no-input or without a terminal). "
                            f"Fix: pass {', '.join(dict.fromkeys(a.flag for a in todo))}")
        for a in asks:
            answers.values[a.key] = a.default
        return
    for a in asks:
        text = ask(a).strip()
        answers.values[a.key] = [v.strip() for v in text.split(",") if v.strip()] if a.listed else text


def init_stack(project: Project, answers: Answers, ask: Optional[Asker]) -> Written:
    """Check the answers, ask what is missing, write stacks/Pulumi.<stack>.yaml once it reads back clean."""
    stack = answers.stack
    if not stack:
        if ask is None:
            raise InitError("egress init: no stack name. Fix: name it: egress init <STACK> (the file becomes stacks/Pulumi.<STACK>.yaml)")
        stack = ask(Ask("", "STACK", "Stack name (e.g. aks-payments)", "")).strip()
    if not _STACK_NAME.fullmatch(stack):
        raise InitError(f"egress init: stack name '{stack}': Pulumi stack names hold letters, digits, '-', '_' and '.'. Fix: choose e.g. 'aks-payments'")
    answers.stack = stack
    _stacks_folder(project, create=False)  # before any question: a stacks/ init cannot write into is said first
    path = project.stack_file(stack)
    where = str(path.relative_to(project.root))
    _not_a_link(path, where)  # before any question, with or without --force
    if answers.force:
        _replaceable(path, where)  # before any question: a stack file --force cannot read is said first
    if path.exists() and not answers.force:
        raise InitError(f"{where}: stack '{stack}' already exists; egress init never overwrites a stack file. "
                        f"Fix: choose another stack name, or pass --force to replace it (the replaced text is shown as a diff)")
    catalog = project.catalog()
    if not answers.platforms:
        if ask is None:
            raise InitError(f"{where}: no platform. Fix: pass --platform (one of: {', '.join(catalog.platforms)})")
        answers.platforms = [p.strip() for p in ask(Ask("platforms", "--platform", f"Platform(s), comma-separated ({', '.join(catalog.platforms)})", ""))
                             .split(",") if p.strip()]
    check_answers(catalog, answers, where)
    answers.values.setdefault("clusterName", stack if re.fullmatch(CLUSTER_NAME_PATTERN, stack) else None)
    if answers.values["clusterName"] is None:
        answers.values.pop("clusterName")
        fill(answers, [Ask("clusterName", "--cluster-name", "Cluster name (lower case, e.g. payments)", "")], ask, where)
    for _ in range(2):  # the openshift platform's own question depends on an answer to the first round
        fill(answers, required(answers), ask, where)
        check_answers(catalog, answers, where)
    values = answers.values
    if values.get("openshiftPlatform") == "VSphere" and values.get("httpProxy") and "noProxy" not in values:
        values["noProxy"] = list(values.get("vsphereEndpoints") or [])  # OpenShift's vSphere docs: vCenter bypasses the proxy
    _priority_band(project, answers)
    for _ in range(5):
        text, later = stack_text(catalog, answers, features_of(catalog, answers.platforms))
        refused = _validate(project, stack, text)
        if refused is None:
            return _write(project, stack, text, later, answers.force)
        known = declared_settings()
        named = [key for key in dict.fromkeys(_NEEDED.findall(refused)) if key in known and key not in SECRET_KEYS]
        needed = [key for key in named if key not in answers.values]
        if not needed:
            options = ", ".join(dict.fromkeys(flag_for(k) for k in named))
            raise InitError(f"{refused} (egress init wrote nothing{'; its options: ' + options if options else ''})")
        if ask is None:
            problem = refused.rsplit(". Fix: ", 1)[0]
            raise InitError(f"{problem}. Fix: pass {', '.join(dict.fromkeys(flag_for(k) for k in needed))} (egress init wrote nothing)")
        fill(answers, [Ask(k, flag_for(k), f"{k} ({known[k]['description']})", "", listed=known[k]["type"] == "array") for k in needed],
             ask, where)
        check_answers(catalog, answers, where)
    raise InitError(f"{where}: the answers still do not resolve. Fix: pass the settings the questions named with --set")


def features_of(catalog: Catalog, platforms: list[str]) -> dict[str, list[str]]:
    """platform -> the features its rows depend on, sorted (the matrix declares them in the platform's file)."""
    found: dict[str, set[str]] = {p: set() for p in platforms}
    for entry in catalog.entries:
        if entry.platform in found:
            found[entry.platform].update(f for f in (entry.feature, *entry.when.features, *entry.when.not_features) if f)
    for name, spec in catalog.feature_needs.items():  # a feature that only brings others along is its platform's too
        for platform, names in found.items():
            if set(spec.needs) & names:
                names.add(name)
    return {p: sorted(names) for p, names in found.items()}


def _priority_band(project: Project, answers: Answers) -> None:
    """On an existing policy, the first band above every other stack's there (egress stacks check refuses overlaps)."""
    policy = answers.values.get("azurePolicyId")
    if "azure" not in answers.targets or not policy or "azurePriorityBase" in answers.values:
        return
    from .fleet import stack_writes

    top = 0
    for other in project.stacks():
        try:
            profile = project.profile(other)
            if "azure" not in profile.targets or (profile.azure_policy_id or "").lower() != str(policy).lower():
                continue
            top = max([top, *(max(w.priorities) for w in stack_writes(project, other).writes if w.priorities)])
        except EgressError:
            continue  # a broken stack is egress stacks check's to report, not init's
    answers.values["azurePriorityBase"] = (top // 100 + 1) * 100 if top else 1000
    answers.band_note = (f"chosen by egress init: the first band above {top}, the highest priority another stack in stacks/ "
                         "writes to this policy" if top else "no other stack in stacks/ writes to this policy")


def _validate(project: Project, stack: str, text: str) -> Optional[str]:
    """Read the draft back as every command does, in a copy of the project: None when it is clean, else the refusal
    (naming the file as stacks/Pulumi.<stack>.yaml)."""
    from .fleet import FleetError, check_fleet, stack_writes
    from .targets import TARGETS

    with tempfile.TemporaryDirectory(prefix="egress-init-") as scratch:
        root = Path(scratch)
        for item in project.root.iterdir():
            if item.name != "stacks":
                (root / item.name).symlink_to(item)  # own catalogs are named relative to the root
        (root / "stacks").mkdir()
        (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(text, encoding="utf-8")
        copy = Project(root)
        try:
            catalog, profile, requirements = copy.requirements(stack)
            for name in profile.targets:  # as egress render does
                TARGETS[name].render(TARGETS[name].compile(catalog, profile, requirements, f"{copy.stack_file(stack)}: stack '{stack}'"))
            if "azure" in profile.targets:
                from .targets.azure.compile import check_deploy_settings

                check_deploy_settings(profile)
                if profile.azure_policy_id:
                    mine = stack_writes(copy, stack)
                    others = [stack_writes(project, s) for s in project.stacks() if s != stack and _on_policy(project, s, profile.azure_policy_id)]
                    try:
                        check_fleet([*others, mine])
                    except FleetError as exc:  # the fleet's fix may name the other stack: here only the new one moves
                        top = max(p for other in others for w in other.writes for p in w.priorities)
                        raise FleetError(f"{str(exc).rsplit('. Fix: ', 1)[0]}. Fix: leave out --priority-base (init then takes the "
                                         f"first free band) or give one above every other stack's, e.g. {(top // 100 + 1) * 100}") from None
        except EgressError as exc:
            message = str(exc).replace(f"{root}{os.sep}", "").replace(str(root), str(project.root))
            return re.sub(r", line \d+:", ":", message)  # the draft's lines: it was not written
    return None


def _on_policy(project: Project, stack: str, policy: str) -> bool:
    try:
        profile = project.profile(stack)
    except EgressError:
        return False
    return "azure" in profile.targets and (profile.azure_policy_id or "").lower() == policy.lower()


def _write(project: Project, stack: str, text: str, later: tuple[str, ...], force: bool) -> Written:
    """Write to a new hidden file beside it, then link it in (never over a file another process just wrote) or, with --force,
    rename it over the old one."""
    _stacks_folder(project, create=True)
    path = project.stack_file(stack)
    _not_a_link(path, str(path))  # judged again: a link made while the questions were asked
    # mkstemp: a new file (O_EXCL) with an unguessable name, so a link planted at a predictable name is never written through
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.init-", dir=path.parent)
    except OSError as exc:
        raise InitError(f"{path}: cannot write into {path.parent.name}/ ({exc.strerror}). Fix: make the folder writable, or run egress init "
                        "where you can write") from None
    temporary = Path(name)
    replaced = ""
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600: the mode a plain write gives
            handle.write(text)
        if force and path.exists():
            old = _replaceable(path, str(path))
            # shown as the stack reader would show values: the replaced file may hold what was refused (a plain secret, a key)
            replaced = "".join(difflib.unified_diff(shown_stack_text(old).splitlines(True), shown_stack_text(text).splitlines(True),
                                                    f"{path.name} (replaced)", path.name))
            os.replace(temporary, path)  # a link put there meanwhile is replaced itself, never written through
        else:
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise InitError(f"{path}: written by someone else meanwhile; egress init never overwrites a stack file. "
                                "Fix: choose another stack name, or pass --force") from None
    finally:
        temporary.unlink(missing_ok=True)
    return Written(path, later, replaced)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _not_a_link(path: Path, where: str) -> None:
    """A symbolic link where the stack file goes is refused: init never writes through one (it could be anyone's file),
    nor replaces one (it may be how a team shares the file), dangling or not."""
    if path.is_symlink():
        target = "".join(c if c.isprintable() else repr(c)[1:-1] for c in os.readlink(path))  # no control character reaches the terminal
        raise InitError(f"{where}: a symbolic link (to {target}); egress init never writes through a link, nor replaces one. "
                        "Fix: remove the link (what it points to stays as it is) and run egress init again, or choose another stack name")


def _replaceable(path: Path, where: str) -> str:
    """The text of the stack file --force replaces ('' when there is none). Only a regular file is read: a folder, a
    FIFO or a device there is not a stack file (reading a FIFO would wait forever); a file that is not UTF-8 is shown
    with its undecodable bytes replaced, as it is going away."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return ""
    except OSError as error:
        raise InitError(f"{where}: cannot read the stack file --force would replace ({error.strerror}). "
                        "Fix: move it aside, or choose another stack name") from None
    if not stat.S_ISREG(mode):
        raise InitError(f"{where}: not a stack file (a folder, FIFO or device stands there); egress init replaces only a "
                        "file. Fix: move it aside, or choose another stack name")
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise InitError(f"{where}: cannot read the stack file --force would replace ({error.strerror}). "
                        "Fix: move it aside, or choose another stack name") from None


def _stacks_folder(project: Project, create: bool) -> None:
    """stacks/ as a folder init can write into, made when missing (a new project has none). A file there, or a symbolic
    link to no folder, is refused: init never creates a folder through a link, nor replaces what stands there. A link to
    an existing folder is the project's stacks/ as every command reads it."""
    folder = project.stacks_dir
    fix = "move it aside and run egress init again (init then creates the folder stacks/), or make stacks/ a folder yourself"
    for _ in range(2):
        if folder.is_dir():
            return
        if folder.is_symlink():
            raise InitError(f"{folder.name}/: a symbolic link to {os.readlink(folder)}, which is no folder; egress init writes the stack file "
                            f"into stacks/ and does not create folders through a link. Fix: {fix}")
        if folder.exists():
            raise InitError(f"{folder.name}/: not a folder (a file); egress init writes the stack file into stacks/. Fix: {fix}")
        if not create:
            return
        try:
            folder.mkdir()  # not parents: the project root exists; mkdir never follows a link that appeared meanwhile
        except FileExistsError:
            continue  # made meanwhile: judged again
        except OSError as exc:
            raise InitError(f"{folder.name}/: cannot create the folder ({exc.strerror}). Fix: create stacks/ in the project yourself") from None
        return


def _cloud(value: str, where: str) -> str:
    text = value.strip().lower().replace(" ", "")
    if text in CLOUD_VARIANTS:
        return text
    if text in _AZ_CLOUDS:  # the name `az cloud list` shows
        return _AZ_CLOUDS[text]
    raise InitError(f"{where}: --cloud '{value}': not an Azure cloud. Fix: {_did_you_mean(text, CLOUD_VARIANTS)}")


def _location(catalog: Catalog, value: str, cloud: str, where: str) -> str:
    text = azure_location(value)  # the portal's display name ('West Europe') is the programmatic one spaced
    names = [location.name for location in catalog.azure_locations.get(cloud, ())]
    if text in names:
        return text
    raise InitError(f"{where}: --location '{value}': not a location of {cloud} (matrix/azure-locations.yaml). Fix: {_did_you_mean(text, names)}")


def _openshift_platform(value: str, where: str) -> str:
    name = openshift_platform(value)  # install-config writes them in lower case (vsphere, baremetal)
    types = get_args(OpenShiftPlatform)
    if name in types:
        return name
    raise InitError(f"{where}: --openshift-platform '{value}': not an OpenShift platform type. Fix: {_did_you_mean(value, types)}")


def _did_you_mean(value: str, choices) -> str:
    """egress/suggest.py's suggestion (the one every message makes), secrets left out of the choices."""
    return did_you_mean(value, [c for c in choices if c not in SECRET_KEYS], limit=12)


def _needs(asks: list[Ask]) -> str:
    return ", ".join(f"{PROJECT}:{a.key}" for a in asks)

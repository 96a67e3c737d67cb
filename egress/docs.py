"""Generated documentation; a test fails when either drifts: docs/MATRIX.md from the matrix (``egress docs matrix``)
and the ``config:`` declarations of Pulumi.yaml from the Profile (``egress docs config``)."""
from __future__ import annotations

import datetime
from typing import Optional

import yaml

from .catalog import export_entry
from .citations import cite, markdown_link
from .models import Catalog, Citation
from .placeholders import PLACEHOLDERS


def pulumi_yaml_with_config(text: str) -> str:
    """Pulumi.yaml with its ``config:`` section (the last one) rewritten from the Profile's settings."""
    from .profile import config_keys

    head, _, _ = text.partition("\nconfig:\n")
    declarations = yaml.safe_dump(config_keys(), sort_keys=False, width=200).splitlines()
    return head + "\nconfig:\n" + "\n".join("  " + line if line else line for line in declarations) + "\n"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cited(catalog: Catalog, citation: Citation) -> str:
    """A citation cell: the source's id linked to its public page, and the section (the Sources table says what was read)."""
    return cite(markdown_link(f"`{citation.source}`", catalog.sources[citation.source].cited), citation.section)


def _differences(catalog: Catalog, on: datetime.date) -> list[str]:
    """One place where a reviewer sees every deliberate departure from the vendor documents, and every retiring row."""
    differing = [e for e in catalog.entries if e.differs_because]
    lines = ["## Where this matrix differs from the vendor documents", "",
             "Entries that deliberately differ from what the cited document says (a host that never matches, a stale row,",
             "an over-broad alternative dropped, a narrower condition). Where the destination differs, the document's own text",
             "is kept in the entry (`documented_as`) and the seed-completeness test counts it.", "",
             f"{len(differing)} entries.", "",
             "| id | the document says | the matrix has | why | citation |", "|---|---|---|---|---|"]
    for entry in differing:
        data = export_entry(entry, catalog)
        said = "<br>".join(f"`{d['destination']}` {d['protocol']}/{','.join(map(str, d['ports']))}"
                           for d in data.get("documented_as", [])) or "(same destination)"
        has = "<br>".join([f"`{entry.destination}` {entry.protocol}/{','.join(map(str, data['ports']))}"]
                          + [f"`{a['destination']}` {a['protocol']}/{','.join(map(str, a['ports']))}" for a in data["alternatives"]])
        lines.append("| " + " | ".join(_cell(x) for x in (entry.id, said, has, entry.differs_because, _cited(catalog, entry.citation))) + " |")
    return lines + _retirements(catalog, on)


def _proxy_paths(catalog: Catalog) -> list[str]:
    """Rows a cluster proxy must leave alone: reached directly (noProxy must cover them) or never TLS-inspected."""
    lines = ["", "## Paths through a cluster proxy", "",
             "Destinations a vendor says the cluster reaches **directly** (a stack whose cluster proxy noProxy does not cover",
             "them is refused), and destinations a TLS-inspecting proxy must **not inspect** (`egress export --for proxy` lists",
             "both for the stack).", "",
             "| id | destination | path | why | citation |", "|---|---|---|---|---|"]
    for entry in catalog.entries:
        for path, said in (("direct (in noProxy)", entry.direct), ("no TLS inspection", entry.no_tls_inspection)):
            if said is not None:
                why = said.because if path.startswith("direct") else said.reason
                lines.append("| " + " | ".join(_cell(x) for x in (entry.id, f"`{entry.destination}`", path, why, _cited(catalog, said.citation))) + " |")
    return lines + [""]


JUDGED_ON = "Retirement dates judged on"


def judged_on(document: str) -> Optional[datetime.date]:
    """The date a generated MATRIX.md judged retirements on: regenerating with it gives the same file on any later day."""
    for line in document.splitlines():
        if line.startswith(JUDGED_ON + " "):
            return datetime.date.fromisoformat(line[len(JUDGED_ON) + 1:].split(" ", 1)[0])
    return None


def _retirements(catalog: Catalog, on: datetime.date) -> list[str]:
    """Rows with a retirement date, split by whether it has passed (judged on today, or EGRESS_TODAY)."""
    lines: list[str] = ["", f"{JUDGED_ON} {on.isoformat()} (`egress docs matrix` judges on today, or `EGRESS_TODAY`; "
                            "a stack's commands judge on the day they run)."]
    for passed, heading in ((True, "Retired rows: their date has passed, so they no longer resolve for any stack "
                                   "(a stack whose feature is left with no row is warned to remove it):"),
                            (False, "Rows the vendor has announced to retire: they resolve until the date "
                                    "(`egress matrix --format json` shows it):")):
        rows = [e for e in catalog.entries if e.retires and (e.retires.date <= on) == passed]
        lines += ["", heading, ""]
        if not rows:
            lines.append("None.")
            continue
        lines += ["| id | destination | retires | announced in |", "|---|---|---|---|"]
        for entry in rows:
            assert entry.retires is not None
            lines.append("| " + " | ".join(_cell(x) for x in (entry.id, f"`{entry.destination}`", entry.retires.date.isoformat(),
                                                               _cited(catalog, entry.retires.citation))) + " |")
    return lines + [""]


def _catalogs(catalog: Catalog) -> list[str]:
    """How catalogs work: the vendor matrix and a stack's own ones, their ids, guard rails, and Azure priority bands."""
    from .catalog.own import ENTRY_POINT_GROUP, EXPIRY_WARNING_DAYS, STACK_CATALOGS
    from .catalog.vendor import AZURE_VENDOR_BANDS
    from .profile import Profile
    from .targets.azure.plan import BAND_WIDTH, MAX_PRIORITY

    base = Profile.model_fields["azure_priority_base"].default
    lines = [
        "## Catalogs", "",
        f"The vendor matrix is one catalog: the {len(catalog.platforms)} platform files below, every entry citing the vendor's own "
        "document. A stack adds its own egress as further catalogs, in the same schema and validated the same way (one error "
        "naming file, line, field, value and fix); an own entry cites an approval instead of a document: "
        "`approval: {owner: <team>, reference: <ticket or URL>, expires: YYYY-MM-DD}` (`expires` optional).", "",
        "| catalog | what it holds | entry ids |", "|---|---|---|",
        f"| `{STACK_CATALOGS[0]}` | the stack's own entries, `egress-matrix:entries`: `id`, `destination`, `protocol` (https), `ports`, "
        "`role` (a role or a source group; nodes), `level` (required), `purpose`, `owner`, `reference`, `expires`, `feature`, `when`, "
        "`alternatives`, `broad`, `note` | `stack/<id>` |",
        f"| `{STACK_CATALOGS[1]}` | the stack's private container registries, `egress-matrix:containerRegistries`, each expanded to the "
        "hosts a pull touches | `registries/<id>` |",
        "| `<platform>` | each file or folder `egress-matrix:catalogs` lists, relative to the folder of Pulumi.yaml (a folder: every "
        "`*.yaml` under it): `kind: platform` and `kind: sources` files in the vendor matrix's schema, `approval:` in place of "
        "`citation:` | `<platform>/<id>` |",
        f"| `<platform>` | `package:<name>` in `egress-matrix:catalogs`: the catalog an installed Python package ships, entry point "
        f"`<name>` in group `{ENTRY_POINT_GROUP}` (a path, a callable returning one, or a package holding the files); publish an "
        "organisation's entries once, use them in many repositories | `<platform>/<id>` |", "",
        "- Ids are namespaced by their catalog, so an own entry never shadows a vendor entry. An own catalog may not take a vendor "
        f"platform's name, a vendor source's id, or the reserved names {', '.join(f'`{n}`' for n in STACK_CATALOGS)}.",
        "- An own catalog applies by being listed (its name need not be in `egress-matrix:platforms`). Its features are declared in "
        "its platform file and turned on with `egress-matrix:features`, and `when:` conditions, `level` and alternatives work as "
        "for vendor entries.",
        "- `role` is one of the five roles or a source group the stack names (`egress-matrix:sourceGroups: {payments: "
        "[10.50.32.0/24]}`); every target allows a group's entries for the group's sources only.",
        f"- On its `expires` date an entry stops resolving (it is no longer allowed); from {EXPIRY_WARNING_DAYS} days ahead, "
        "commands warn on stderr (the date they judge by is today, or `EGRESS_TODAY`).",
        "- Guard rails: an own entry may not allow `*`, addresses beyond `maxPublicShare` of public space, a public suffix or a "
        "wildcard on one (`com`, `*.com`, `*.co.uk`: the ICANN section of the Public Suffix List) or more than `maxPortSpan` ports, "
        "unless it says why in `broad: <reason>`; `allowBroadEgress` does not cover own entries. `egress catalog check` reports "
        "an own entry that repeats a vendor entry's flow; the policy `own-entries-reviewed` (advisory unless the pack's config "
        f"makes it mandatory) lists own entries that carry `broad`, repeat a vendor entry, or expire within {EXPIRY_WARNING_DAYS} days.",
        "",
        "### Azure priority bands", "",
        f"Every catalog a stack uses gets one rule collection group at `azurePriorityBase` (default {base}) + {BAND_WIDTH} × its band, "
        f"so a band is {BAND_WIDTH} priorities wide. Bands 0-{AZURE_VENDOR_BANDS - 1} are the vendor platforms' (each platform file's "
        f"`azure_band`; two platforms on one band are refused). Own catalogs take bands {AZURE_VENDOR_BANDS} onward, always in "
        f"this order: {', '.join(f'`{n}`' for n in STACK_CATALOGS)}, then the catalogs of `egress-matrix:catalogs` as listed "
        "(a folder's catalogs in file-name order; append a new catalog at the end: reordering the list, or a folder gaining a file "
        "that sorts earlier, moves the others' groups). A catalog's file may pin its band with `azure_band: <20-646>`, which no "
        "other catalog takes or moves. A group priority over "
        f"{MAX_PRIORITY}, or one in `azureExistingPriorities`, is refused.", "",
        "| band | catalog | priority at the default base |", "|---|---|---|",
    ]
    for platform, band in sorted(catalog.azure_bands.items(), key=lambda item: item[1]):
        lines.append(f"| {band} | `{platform}` (vendor) | {base + BAND_WIDTH * band} |")
    for offset, name in enumerate(STACK_CATALOGS):
        band = AZURE_VENDOR_BANDS + offset
        lines.append(f"| {band} | `{name}` | {base + BAND_WIDTH * band} |")
    first = AZURE_VENDOR_BANDS + len(STACK_CATALOGS)
    lines.append(f"| {first}, {first + 1}, ... | `egress-matrix:catalogs`, in listed order | {base + BAND_WIDTH * first}, "
                 f"{base + BAND_WIDTH * (first + 1)}, ... |")
    return lines + [""]


def _feature_text(catalog: Catalog, feature: str) -> str:
    """A feature's title, and what it brings along (with where that is said)."""
    spec = catalog.feature_needs.get(feature)
    if spec is None:
        return catalog.features[feature]
    needs = ", ".join(f"`{n}`" for n in spec.needs)
    said = f"; {_cited(catalog, spec.citation)}" if spec.citation else ""
    return f"{catalog.features[feature]}; brings along {needs}{said}"


def matrix_markdown(catalog: Catalog, on: Optional[datetime.date] = None) -> str:
    """docs/MATRIX.md. Retirements are judged on ``on`` (default today, or EGRESS_TODAY): the file changes when a row retires."""
    from .catalog.own import today

    on = on or today()
    lines = [
        "# The required-endpoint matrix",
        "",
        "<!-- Generated by `egress docs matrix` from matrix/*.yaml. Do not edit by hand. -->",
        "",
        f"{len(catalog.entries)} entries in {len(catalog.platforms)} platforms, citing {len(catalog.sources)} documents.",
        "Destinations use placeholders written `{name}`; the stack fills them (see *Placeholders*).",
        "Alternatives are equivalent destinations: the resolver picks the narrowest one the stack can fill.",
        "",
        *_catalogs(catalog),
    ]
    for platform, title in catalog.platforms.items():
        entries = [e for e in catalog.entries if e.platform == platform]
        lines += [f"## {title} (`{platform}`)", "", f"{len(entries)} entries.", ""]
        features = {f for e in entries for f in (e.feature, *e.when.features) if f}
        features |= {name for name, spec in catalog.feature_needs.items() if features & set(spec.needs)}  # rows of their own or not
        if features:
            lines += ["Features: " + ", ".join(f"`{f}` ({_feature_text(catalog, f)})" for f in sorted(features)), ""]
        lines += ["| id | role | destination | protocol/ports | level | variant | feature | conditions | alternatives | purpose | citation |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for entry in entries:
            data = export_entry(entry, catalog)
            alternatives = "<br>".join(f"`{a['destination']}` {a['protocol']}/{','.join(map(str, a['ports']))}" for a in data["alternatives"])
            purpose = entry.purpose + (f" — images: {len(entry.images)}" if entry.images else "") + (f" — *{entry.note}*" if entry.note else "")
            if entry.differs_because:
                purpose += " — differs from the document (see below)"
            if entry.retires:
                purpose += f" — **{'retired' if entry.retires.date <= on else 'retires'} {entry.retires.date.isoformat()}**"
            citation = _cited(catalog, entry.citation)
            lines.append("| " + " | ".join(_cell(x) for x in (
                entry.id, entry.role, f"`{entry.destination}`", f"{entry.protocol}/{','.join(map(str, data['ports']))}",
                entry.level, entry.variant or "all", entry.feature or "core", ", ".join(entry.when.describe()) or "—",
                alternatives or "—", purpose, citation)) + " |")
        lines.append("")
    lines += _differences(catalog, on)
    lines += _proxy_paths(catalog)
    lines += ["## Host expansions", "",
              "A requirement whose host is listed here brings the further hosts a pull or download really touches.", "",
              "| host | implies | note | citation |", "|---|---|---|---|"]
    for expansion in catalog.expansions:
        implied = "<br>".join(f"`{h.destination}` — {h.purpose}" + (f" ({', '.join(h.when.describe())})" if h.when.describe() else "")
                              for h in expansion.implies) or "(none documented)"
        lines.append("| " + " | ".join(_cell(x) for x in (f"`{expansion.host}`", implied, expansion.note or "—",
                                                           _cited(catalog, expansion.citation))) + " |")
    lines += ["", "## Allowlist exports", "",
              "Addresses of the cluster that other teams must put in *their* allowlists; a stack exports them with its values.", "",
              "| id | platform | values (or the stack setting holding them) | allowlist | direction | purpose | citation |", "|---|---|---|---|---|---|---|"]
    for export in catalog.exports:
        values = f"`egress-matrix:{export.values_from}`" if export.values_from else ", ".join(f"`{v}`" for v in export.values)
        values += "" if export.level == "required" else f" ({export.level})"
        lines.append("| " + " | ".join(_cell(x) for x in (export.id, export.platform, values, export.allowlist,
                                                           export.direction, export.purpose, _cited(catalog, export.citation))) + " |")
    lines += ["", "## OpenShift automatic no-proxy entries", "",
              "What the cluster-network-operator adds to Proxy `status.noProxy` by itself (sorted, de-duplicated, joined with ',').", "",
              "| id | entry | when | note | citation |", "|---|---|---|---|---|"]
    for rule in (*catalog.noproxy_rules, *catalog.noproxy_removed):
        entry = f"`{rule.value}`" if rule.value else f"each of `egress-matrix:{rule.from_}`"
        when = ", ".join(f"{k}={'/'.join(v) if isinstance(v, tuple) else v}" for k, v in rule.when.model_dump(exclude_none=True).items()) or "always"
        if rule in catalog.noproxy_removed:
            when = "**removed**: not emitted"
        lines.append("| " + " | ".join(_cell(x) for x in (rule.id, entry, when, rule.note or "—", _cited(catalog, rule.citation))) + " |")
    lines += ["", "## Placeholders", "", "| placeholder | filled from stack key | meaning |", "|---|---|---|"]
    for name, placeholder in sorted(PLACEHOLDERS.items()):
        lines.append(f"| `{{{name}}}` | `egress-matrix:{placeholder.stack_key}` | {_cell(placeholder.description)} |")
    lines += ["", "## Sources", "",
              "Every citation above links to the document's public page (on github.com, at the commit read where one is known). "
              "*What was read* names the file, commit or date; for the five documents the project started from, also the "
              "copy that was transcribed (the project's record of the text the matrix was built from).", "",
              "| id | document | what was read |", "|---|---|---|"]
    for source_id, source in catalog.sources.items():
        lines.append(f"| `{source_id}` | {_cell(markdown_link(source.title, source.url))} | {_cell(source.doc)} |")
    return "\n".join(lines) + "\n"

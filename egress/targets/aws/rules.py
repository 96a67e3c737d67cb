"""The Suricata rules a Network Firewall runs, read the way the engine matches them, for the evaluator.

Parsed with idstools (the parser suricata-update uses). Understood: actions pass / drop / reject / alert; protocols
ip, tcp, udp, tls, http; addresses and ports as literals, lists and ranges (``$HOME_NET`` is expanded in the file
we render; ``$EXTERNAL_NET`` and ``any`` are "anywhere outside"); ``tls.sni`` / ``http.host`` contents with
``dotprefix``, ``startswith``, ``endswith``, ``nocase`` (reference/aws-egress.md §3); AWS's generated catch-alls
(``ssl_state:client_hello``, ``http.header_names; content:"|0d 0a|"; startswith``). Anything else a rule uses makes
it ``opaque``: a pass that cannot be judged allows nothing, a drop that cannot be judged is taken to stop all it
could (both said in the verdict), so the evaluator never claims more than the engine would do.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from idstools import rule as idstools_rule

from ...addresses import PortRange, normalize_ports
from ..sets import AddressSet, Interval, parse_interval

ANY_PORT = PortRange(1, 65535)
_APP_TRANSPORT = {"tls": "tcp", "http": "tcp"}
_NAME_BUFFERS = {"tls.sni": "tls", "http.host": "http"}
_HARMLESS = {"msg", "sid", "rev", "gid", "metadata", "flow", "ssl_state", "priority", "classtype", "reference", "alert", "noalert"}
_CATCH_ALL_HEADERS = ('http.header_names', '"|0d 0a|"')


@dataclass(frozen=True)
class NameMatch:
    """One ``content`` on ``tls.sni`` / ``http.host``: which names it matches."""

    text: str
    dotprefix: bool = False
    startswith: bool = False
    endswith: bool = False
    nocase: bool = False

    def matches(self, name: str) -> bool:
        buffer = ("." if self.dotprefix else "") + name
        text = self.text
        if self.nocase:
            buffer, text = buffer.lower(), text.lower()
        if self.startswith and self.endswith:
            return buffer == text
        if self.endswith:
            return buffer.endswith(text)
        return buffer.startswith(text) if self.startswith else text in buffer

    def covers_subdomains(self, domain: str) -> bool:
        """Does it match every name ``<labels>.domain``? (What the matrix's ``*.domain`` stands for.)"""
        suffix = "." + domain.lower()
        text = self.text.lower() if self.nocase else self.text
        if self.startswith:
            return False
        return suffix.endswith(text) if self.endswith else text in suffix

    def overlaps_subdomains(self, domain: str) -> bool:
        suffix = "." + domain.lower()
        text = self.text.lower() if self.nocase else self.text
        if self.startswith and self.endswith:
            name = text[1:] if self.dotprefix else text
            return name.endswith(suffix)
        if self.endswith:
            return text.endswith(suffix) or suffix.endswith(text)
        return True  # a prefix or an infix: some subdomain can carry it


@dataclass(frozen=True)
class Rule:
    group: str  # the rule group it came from (the render's '# <group> (...)' header)
    line: int
    text: str
    action: str
    proto: str
    sources: Optional[AddressSet]  # None: any
    destinations: Optional[AddressSet]  # None: any, or $EXTERNAL_NET
    ports: tuple[PortRange, ...]
    names: tuple[NameMatch, ...] = ()
    app_buffer: str = ""  # 'tls.sni' | 'http.host' when names are matched
    to_client: bool = False
    opaque: str = ""  # why the evaluator cannot judge what it matches
    sid: int = 0
    msg: str = ""

    @property
    def label(self) -> str:
        return f"{self.group} sid {self.sid}" + (f" ({self.msg})" if self.msg else "")

    @property
    def app(self) -> Optional[str]:
        """The application layer its names are matched in: tls | http."""
        return _NAME_BUFFERS.get(self.app_buffer)

    @property
    def allows(self) -> bool:
        return self.action == "pass"

    @property
    def blocks(self) -> bool:
        return self.action in ("drop", "reject")


@lru_cache(maxsize=256)
def _addresses(text: str) -> tuple[Optional[AddressSet], str]:
    """(set, '') with None for any; (None, why) when the text cannot be judged. Cached: every rule of a role repeats
    the role's sources (thousands of /32s), and the set is immutable."""
    text = text.strip()
    if text in ("any", "$EXTERNAL_NET"):
        return None, ""
    items = [i.strip() for i in text.strip("[]").split(",")] if text.startswith("[") else [text]
    intervals: list[Interval] = []
    for item in items:
        interval = parse_interval(item) if not item.startswith(("!", "$", "@")) else None
        if interval is None:
            return None, f"address '{item}'"
        intervals.append(interval)
    return AddressSet.of(intervals), ""


def _ports(text: str) -> tuple[tuple[PortRange, ...], str]:
    text = text.strip()
    if text == "any":
        return (ANY_PORT,), ""
    items = [i.strip() for i in text.strip("[]").split(",")] if text.startswith("[") else [text]
    ranges = []
    for item in items:
        low, sep, high = item.partition(":")
        if not low.isdigit() or (high and not high.isdigit()):
            return (), f"port '{item}'"
        ranges.append(PortRange(int(low), int(high) if high else 65535 if sep else int(low)))
    return normalize_ports(ranges), ""


def parse_rule(text: str, group: str = "", line: int = 0) -> Rule:
    parsed = idstools_rule.parse(text)
    if parsed is None:
        raise ValueError(f"line {line}: not a Suricata rule: {text[:120]}")
    sources, why_source = _addresses(parsed.source_addr)
    destinations, why_destination = _addresses(parsed.dest_addr)
    ports, why_ports = _ports(parsed.dest_port)
    opaque = [w for w in (why_source, why_destination, why_ports) if w]
    if parsed.direction != "->":
        opaque.append(f"direction '{parsed.direction}'")
    if parsed.source_port != "any":
        opaque.append(f"source port '{parsed.source_port}'")
    names: list[NameMatch] = []
    buffer, app_buffer, to_client = "", "", False
    options = parsed.options
    for index, option in enumerate(options):
        name, value = option["name"], option["value"]
        if name in _NAME_BUFFERS or name in ("http.header_names", "dotprefix"):
            buffer = name if name != "dotprefix" else buffer
        elif name == "content":
            modifiers = set()
            for following in options[index + 1:]:
                if following["name"] not in ("nocase", "startswith", "endswith"):
                    break
                modifiers.add(following["name"])
            if buffer in _NAME_BUFFERS:
                app_buffer = buffer
                previous = options[index - 1]["name"] if index else ""
                names.append(NameMatch(value.strip('"'), dotprefix=previous == "dotprefix", startswith="startswith" in modifiers,
                                       endswith="endswith" in modifiers, nocase="nocase" in modifiers))
            elif (buffer, value) != _CATCH_ALL_HEADERS or "startswith" not in modifiers:
                opaque.append(f"content {value} on '{buffer or 'the packet'}'")
        elif name in ("nocase", "startswith", "endswith"):
            continue
        elif name == "flow":
            to_client = "to_client" in value or "from_server" in value
        elif name not in _HARMLESS:
            opaque.append(f"keyword '{name}'")
    if parsed.proto not in ("ip", "tcp", "udp", *_APP_TRANSPORT):
        opaque.append(f"protocol '{parsed.proto}'")
    return Rule(group=group, line=line, text=text, action=parsed.action, proto=parsed.proto, sources=sources, destinations=destinations,
                ports=ports, names=tuple(names), app_buffer=app_buffer, to_client=to_client, opaque="; ".join(opaque),
                sid=parsed.sid or 0, msg=parsed.msg or "")


def parse_rules(text: str) -> list[Rule]:
    """Every rule of a rules file in file order (strict order); '# <group> (...)' headers name the group that follows."""
    rules, group = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            group = stripped.lstrip("# ").split(" ", 1)[0]
        elif stripped:
            rules.append(parse_rule(stripped, group, number))
    return rules

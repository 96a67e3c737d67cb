"""OpenShift's own checks of a cluster Proxy, with its messages (reference/openshift-proxy.md §2).

- ``validate_proxy_spec``: the cluster-network-operator's ``ValidateProxyConfig`` (pkg/controller/proxyconfig/
  validation.go @ 2a6a57fef3ac): the first error only, in its order. URIs are checked with Go's ``net/url`` semantics
  (egress/gonet.py). The readiness endpoints' live probe through the proxy cannot run offline; their URIs are checked.
- ``validate_trust_bundle``: the trustedCA ConfigMap contract: key ``ca-bundle.crt``, not empty, at least one PEM
  ``CERTIFICATE`` block without headers that parses as X.509 (library-go ``CertsFromPEM``, with ``cryptography``).
- ``installer_proxy_ip_errors``: openshift-install's rule that a proxy given as an IP must not sit in the cluster or
  service networks (pkg/types/validation/installconfig.go ``validateIPProxy``), in its field.Error format.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Iterable, Optional

from ...errors import EgressError
from ...gonet import CNOValidationError, GoURLError, cno_ip_address_or_cidr, cno_uri, go_quote, parse_ip, parse_request_uri
from ...redact import redact_message

PROXY_NAME = "cluster"
TRUSTED_CA_KEY = "ca-bundle.crt"
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")


class ProxyValidationError(EgressError):
    """The operator would refuse this Proxy; ``str()`` is the operator's own error text, except that credentials in the
    values it quotes (``quoted``), or in the pieces of them Go's parser quotes, are masked."""

    def __init__(self, message: str, *quoted: str):
        super().__init__(redact_message(message, *quoted))


def degraded_message(error: str) -> str:
    """The operator's Degraded condition (reason InvalidProxyConfig) for a validation error."""
    return (f"The configuration is invalid for proxy '{PROXY_NAME}' ({error}). "
            f"Use 'oc edit proxy.config.openshift.io {PROXY_NAME}' to fix.")


def _scheme(field: str, uri: str) -> str:
    """validation.URI's scheme, or the operator's 'invalid <field> URI' error."""
    try:
        return cno_uri(uri).scheme
    except (GoURLError, CNOValidationError) as exc:
        raise ProxyValidationError(f"invalid {field} URI: {exc}", uri) from None


def _is_domain(value: str) -> bool:
    """validation.DomainName(v, acceptTrailingDot=true): one leading and one trailing '.' stripped, then DNS-1123 subdomain."""
    value = value.removeprefix(".").removesuffix(".")
    return len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.match(value))


def _trim_space(value: str) -> str:
    return value.strip(" \t\n\r\v\f\u0085\u00a0")  # Go strings.TrimSpace: Unicode White_Space


def validate_proxy_spec(http_proxy: str = "", https_proxy: str = "", no_proxy: str = "", readiness_endpoints: Iterable[str] = ()) -> None:
    """Raise ProxyValidationError with the operator's first error, or return when it would accept the spec."""
    if not http_proxy and not https_proxy:
        raise ProxyValidationError("httpProxy or httpsProxy must be set when using proxy")
    if http_proxy and _scheme("httpProxy", http_proxy) != "http":
        raise ProxyValidationError("httpProxy requires a 'http' URI scheme")
    if https_proxy and _scheme("httpsProxy", https_proxy) not in ("http", "https"):
        raise ProxyValidationError("httpsProxy requires a 'http' or 'https' URI scheme")
    if no_proxy and no_proxy != "*":
        for element in no_proxy.split(","):
            element = _trim_space(element)
            if not _is_domain(element):
                try:
                    cno_ip_address_or_cidr(element)
                except CNOValidationError:
                    raise ProxyValidationError(f"invalid noProxy: {element}", element) from None
    for endpoint in readiness_endpoints:
        try:
            cno_uri(endpoint)
        except (GoURLError, CNOValidationError) as exc:
            raise ProxyValidationError(f"invalid URI for readinessEndpoint '{endpoint}': {exc}", endpoint) from None


def validate_trust_bundle(name: str, data: Optional[dict[str, str]]) -> list:
    """The certificates of the trustedCA ConfigMap ``name`` with ``data`` (None: the ConfigMap does not exist), or
    ProxyValidationError with the operator's wrapped message."""
    from cryptography import x509

    if data is None:
        raise ProxyValidationError(f"failed to validate configmap reference for proxy trustedCA '{name}': failed to get trustedCA "
                                   f"configmap for proxy {PROXY_NAME}: configmaps \"{name}\" not found")
    prefix = f"failed to validate trust bundle for proxy trustedCA '{name}': "
    if TRUSTED_CA_KEY not in data:
        raise ProxyValidationError(f"{prefix}ConfigMap {go_quote(name)} is missing {go_quote(TRUSTED_CA_KEY)}")
    bundle = data[TRUSTED_CA_KEY]
    if not bundle:
        raise ProxyValidationError(f"{prefix}data key {go_quote(TRUSTED_CA_KEY)} is empty from ConfigMap {go_quote(name)}")
    certificates = []
    for block in _pem_blocks(bundle):
        try:
            certificates.append(x509.load_der_x509_certificate(block))
        except ValueError:  # Go's x509.ParseCertificate says no more than this about bad DER
            raise ProxyValidationError(f"{prefix}failed parsing certificate data from ConfigMap {go_quote(name)}: x509: malformed certificate") from None
    if not certificates:
        raise ProxyValidationError(f"{prefix}failed parsing certificate data from ConfigMap {go_quote(name)}: could not read any certificates")
    return certificates


def _pem_blocks(text: str) -> list[bytes]:
    """The DER bytes of every ``CERTIFICATE`` block without headers, as library-go's CertsFromPEM reads them with Go's
    pem.Decode (other block types and blocks with headers are skipped)."""
    blocks = []
    rest = text.encode("utf-8", "surrogatepass")
    while rest:
        block, rest = _pem_decode(rest)
        if block is None:
            break
        kind, headers, der = block
        if kind == b"CERTIFICATE" and not headers:
            blocks.append(der)
    return blocks


def _get_line(data: bytes) -> tuple[bytes, bytes]:
    """Go's pem getLine: the first line without its '\\n' (and one '\\r' before it) and trailing spaces and tabs; the rest."""
    i = data.find(b"\n")
    if i < 0:
        i = j = len(data)
    else:
        j = i + 1
        if i > 0 and data[i - 1:i] == b"\r":
            i -= 1
    return data[:i].rstrip(b" \t"), data[j:]


def _pem_decode(data: bytes) -> tuple[Optional[tuple[bytes, dict, bytes]], bytes]:
    """Go's encoding/pem Decode (golang/go src/encoding/pem/pem.go, 08b16d70): BEGIN at the start of the data or of a
    line, its line ending in '-----' after trailing blanks; END at the start of a line, with the same type and nothing
    but blanks after it (text there, '-----END CERTIFICATE----- # note', makes Go skip the block); a body that is not
    base64 skips it too. ((type, headers, bytes), rest), or (None, data) when no block is left."""
    import base64
    import binascii

    rest = data
    while True:
        if rest.startswith(b"-----BEGIN "):
            rest = rest[len(b"-----BEGIN "):]
        else:
            at = rest.find(b"\n-----BEGIN ")
            if at < 0:
                return None, data
            rest = rest[at + len(b"\n-----BEGIN "):]
        type_line, rest = _get_line(rest)
        if not type_line.endswith(b"-----"):
            continue
        type_line = type_line[:-5]
        headers: dict[bytes, bytes] = {}
        while True:
            if not rest:
                return None, data
            line, following = _get_line(rest)
            key, colon, value = line.partition(b":")
            if not colon:
                break
            headers[key.strip()] = value.strip()
            rest = following
        if not headers and rest.startswith(b"-----END "):
            end_index, trailer_index = 0, len(b"-----END ")
        else:
            end_index = rest.find(b"\n-----END ")
            trailer_index = end_index + len(b"\n-----END ")
        if end_index < 0:
            continue
        trailer = rest[trailer_index:]
        trailer_length = len(type_line) + 5
        if len(trailer) < trailer_length:
            continue
        rest_of_end_line, trailer = trailer[trailer_length:], trailer[:trailer_length]
        if not trailer.startswith(type_line) or not trailer.endswith(b"-----") or _get_line(rest_of_end_line)[0]:
            continue
        body = rest[:end_index].replace(b" ", b"").replace(b"\t", b"").replace(b"\r", b"").replace(b"\n", b"")
        try:
            der = base64.b64decode(body, validate=True)
        except binascii.Error:
            continue
        return (type_line, headers, der), _get_line(rest[end_index + len(b"\n-----END ") - 1:])[1]


def installer_proxy_ip_errors(field: str, url: str, cluster_networks: Iterable[str], service_networks: Iterable[str]) -> list[str]:
    """openshift-install: a proxy whose host is an IP must lie outside the cluster and service networks."""
    try:
        host = parse_request_uri(url).hostname()
    except GoURLError:
        return []
    address = parse_ip(host)
    if address is None:
        return []
    errors = []
    for kind, networks in (("cluster", cluster_networks), ("service", service_networks)):
        if any(address in ipaddress.ip_network(n, strict=False) for n in networks):
            errors.append(redact_message(f"proxy.{field}: Invalid value: \"{url}\": proxy value is part of the {kind} networks", url))
    return errors

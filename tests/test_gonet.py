"""egress.gonet against Go's own test tables (tests/data/go_url_cases.yaml, ported from golang/go url_test.go and
ip_test.go) and against the cluster-network-operator's validation cases (tests/data/openshift_noproxy_parity.yaml,
functions validation.URI and validation.IPAddressOrCIDR): verdicts, and error texts byte for byte."""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

from egress.gonet import (URL, CNOValidationError, GoAddrError, GoParseError, GoURLError, cno_ip_address_or_cidr,
                          cno_uri, go_quote, parse, parse_addr, parse_cidr, parse_ip, parse_request_uri)

DATA = Path(__file__).parent / "data"
GO = yaml.safe_load((DATA / "go_url_cases.yaml").read_text(encoding="utf-8"))
PARITY = yaml.safe_load((DATA / "openshift_noproxy_parity.yaml").read_text(encoding="utf-8"))
CNO_URI = [c for c in PARITY["validation_cases"] if c.get("function") == "validation.URI"]
CNO_IP = [c for c in PARITY["validation_cases"] if c.get("function") == "validation.IPAddressOrCIDR"]


def ids(cases, key):
    return [repr(c.get(key, c.get(key + "_bytes"))) for c in cases]


def error_of(fn, arg) -> str | None:
    try:
        fn(arg)
    except ValueError as e:
        return str(e)
    return None


def test_the_port_is_complete():
    counts = {k: len(v) for k, v in GO.items() if isinstance(v, list)}
    assert counts == {"parse_request_uri": 44, "parse_errors": 44, "invalid_parse": 6, "hostname_and_port": 21,
                      "parse": 61, "parse_ip": 26, "parse_cidr": 28, "derived_cno_uri": 44, "derived_parse": 8,
                      "derived_ip_address_or_cidr": 16, "derived_parse_addr": 14, "derived_quote": 7,
                      "reject_control_characters": 4, "invalid_user_password": 1}
    assert len(CNO_URI) == 18 and len(CNO_IP) == 8


# ---- Go url_test.go -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", GO["parse_request_uri"], ids=ids(GO["parse_request_uri"], "url"))
def test_parse_request_uri(case):
    assert error_of(parse_request_uri, case["url"]) == (None if case["valid"] else case["error_derived"])


def test_parse_request_uri_keeps_a_scheme_relative_looking_path():
    path = "//not.a.user@not.a.host/just/a/path"
    assert parse_request_uri(path).path == path and parse_request_uri(path).host == ""


@pytest.mark.parametrize("case", GO["parse_errors"], ids=ids(GO["parse_errors"], "in"))
def test_parse_errors(case):
    assert error_of(parse, case["in"]) == (case["error_derived"] if case["want_err"] else None)


@pytest.mark.parametrize("case", GO["invalid_parse"], ids=[c["name"] for c in GO["invalid_parse"]])
def test_invalid_parse(case):
    with pytest.raises(GoURLError) as err:
        parse(case["in"])
    assert err.value.op == "parse" and str(err.value) == case["error_derived"]


@pytest.mark.parametrize("case", GO["hostname_and_port"], ids=ids(GO["hostname_and_port"], "host"))
def test_hostname_and_port(case):
    url = URL(host=case["host"])
    assert (url.hostname(), url.port()) == (case["hostname"], case["port"])


def fields(url: URL) -> dict:
    got = {k: v for k, v in vars(url).items() if k != "user" and v not in ("", False)}
    if url.user is not None:
        got["user"] = {"username": url.user.username, "password": url.user.password}
    return got


@pytest.mark.parametrize("case", GO["parse"], ids=ids(GO["parse"], "in"))
def test_parse(case):
    assert fields(parse(case["in"])) == case["want"]


@pytest.mark.parametrize("case", GO["reject_control_characters"],
                         ids=ids(GO["reject_control_characters"], "in"))
def test_reject_control_characters(case):
    if case.get("valid"):
        parse(case["in_bytes"])  # non-ASCII control bytes are not rejected
    else:
        assert case["error_substring"] in error_of(parse, case["in"])


def test_invalid_user_password():
    (case,) = GO["invalid_user_password"]
    assert case["error_substring"] in error_of(parse, case["in"])
    assert error_of(parse, case["in"]) == 'parse "http://user^:passwo^rd@foo.com/": net/url: invalid userinfo'


# ---- Go ip_test.go --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", GO["parse_ip"], ids=ids(GO["parse_ip"], "in"))
def test_parse_ip(case):
    want = case["out"] and ipaddress.ip_address(case["out"])
    assert parse_ip(case["in"]) == want


@pytest.mark.parametrize("case", GO["parse_cidr"], ids=ids(GO["parse_cidr"], "in"))
def test_parse_cidr(case):
    if "error" in case:
        with pytest.raises(GoParseError) as err:
            parse_cidr(case["in"])
        assert str(err.value) == case["error"]
    else:
        assert parse_cidr(case["in"]) == (ipaddress.ip_address(case["ip"]), ipaddress.ip_network(case["net"]))


# ---- cases worked out from the code ---------------------------------------------------------------------------

def uri_of(case):
    return case.get("uri", case.get("uri_bytes"))


@pytest.mark.parametrize("case", GO["derived_cno_uri"], ids=ids(GO["derived_cno_uri"], "uri"))
def test_cno_uri_derived(case):
    if not case["valid"]:
        assert error_of(cno_uri, uri_of(case)) == case["error"]
        return
    url = cno_uri(uri_of(case))
    expect = {k: case[k] for k in ("scheme", "opaque", "host", "hostname", "port", "path", "raw_query") if k in case}
    got = {"scheme": url.scheme, "opaque": url.opaque, "host": url.host, "hostname": url.hostname(),
           "port": url.port(), "path": url.path, "raw_query": url.raw_query}
    assert {k: got[k] for k in expect} == expect
    if "username" in case:
        assert (url.user.username, url.user.password) == (case["username"], case["password"])


@pytest.mark.parametrize("case", GO["derived_parse"], ids=ids(GO["derived_parse"], "in"))
def test_parse_derived(case):
    if "error" in case:
        assert error_of(parse, case["in"]) == case["error"]
    else:
        assert fields(parse(case["in"])) == case["want"]


@pytest.mark.parametrize("case", GO["derived_ip_address_or_cidr"], ids=ids(GO["derived_ip_address_or_cidr"], "in"))
def test_ip_address_or_cidr_derived(case):
    assert error_of(cno_ip_address_or_cidr, case["in"]) == (None if case["valid"] else case["error"])


@pytest.mark.parametrize("case", GO["derived_parse_addr"], ids=ids(GO["derived_parse_addr"], "in"))
def test_parse_addr_derived(case):
    with pytest.raises(GoAddrError) as err:
        parse_addr(case["in"])
    assert str(err.value) == case["error"]


@pytest.mark.parametrize("case", GO["derived_quote"], ids=ids(GO["derived_quote"], "in"))
def test_quote(case):
    assert go_quote(case["in"]) == case["want"]


def test_the_brief_examples():
    assert error_of(parse_request_uri, "redhat.com") == 'parse "redhat.com": invalid URI for request'
    assert error_of(parse_request_uri, "http://[::1") == '''parse "http://[::1": missing ']' in host'''
    assert error_of(parse_request_uri, "http://a b") == 'parse "http://a b": invalid character " " in host name'
    assert error_of(parse_request_uri, "http://x:port") == 'parse "http://x:port": invalid port ":port" after host'
    assert error_of(parse, "1http://x") == 'parse "1http://x": first path segment in URL cannot contain colon'
    assert parse_request_uri("HTTPS://Host").scheme == "https"


# ---- CNO's own validation cases (openshift_noproxy_parity.yaml) -----------------------------------------------

@pytest.mark.parametrize("case", CNO_URI, ids=[repr(c["value"]) for c in CNO_URI])
def test_cno_validation_uri(case):
    uri, err = case["value"], error_of(cno_uri, case["value"])
    if case["valid"]:
        assert err is None
        scheme = cno_uri(uri).scheme
        assert scheme == case["scheme_derived"]
        # ValidateProxyConfig's scheme checks (pkg/controller/proxyconfig/validation.go)
        assert case["as_httpProxy"] == ("valid" if scheme == "http" else "httpProxy requires a 'http' URI scheme")
        assert case["as_httpsProxy"] == ("valid" if scheme in ("http", "https")
                                         else "httpsProxy requires a 'http' or 'https' URI scheme")
    else:
        assert err == case["error_derived"]
        assert case["as_httpProxy"] == f"invalid httpProxy URI: {err}"
        assert case["as_httpsProxy"] == f"invalid httpsProxy URI: {err}"
        assert case["as_readinessEndpoint"] == f"invalid URI for readinessEndpoint '{uri}': {err}"


@pytest.mark.parametrize("case", CNO_IP, ids=[repr(c["value"]) for c in CNO_IP])
def test_cno_validation_ip_address_or_cidr(case):
    assert error_of(cno_ip_address_or_cidr, case["value"]) == (None if case["valid"] else case["error_derived"])


def test_cno_errors_are_value_errors():
    assert issubclass(CNOValidationError, ValueError) and issubclass(GoURLError, ValueError)
    with pytest.raises(GoURLError) as err:
        cno_uri("redhat.com")
    assert (err.value.op, err.value.url, err.value.err) == ("parse", "redhat.com", "invalid URI for request")

"""Issue 17, second hostile review of the secret fixes: text on a CA bundle's BEGIN/END lines, query parameters and
connection strings that carry credentials, a token before a host in an error, a replaced stack file's comments and
anchors, an npm scope in a destination's path. Each test holds what the review saw printed or deployed."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from egress.addresses import AddressError
from egress.errors import EgressError, ProfileError
from egress.pem import bundle_as_deployed, check_certificates_only
from egress.profile import profile_from_config
from egress.redact import HIDDEN, redact
from egress.stack_shown import shown_stack_text
from egress.targets.kubernetes.openshift_checks import _pem_blocks

from test_kubernetes_target import ca_pem

CORPUS = yaml.safe_load((Path(__file__).parent / "bad_inputs" / "cases.yaml").read_text())
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _marked(cert: str, begin: str = "", end: str = "") -> str:
    lines = cert.rstrip("\n").split("\n")
    return "\n".join([lines[0] + begin, *lines[1:-1], lines[-1] + end]) + "\n"


# -- 1: a BEGIN/END line holds its marker only (Go's pem.Decode skips the block otherwise, and the text was deployed) ----
@pytest.mark.parametrize("begin, end, says, advice", [
    ("", " # proxy admin password: Hunter2Hunter2", "line 9 (a PEM END line) names a password, token or credential besides its marker", "change that password"),
    (" pw: Hunter2Hunter2", "", "line 1 (a PEM BEGIN line) names a password, token or credential besides its marker", "change that password"),
    ("", " http://alice:Hunter2Hunter2@proxy.corp:3128", "line 9 (a PEM END line) holds a URL or host with credentials", "change that password"),
    ("", " # Corp Proxy CA", "line 9 (a PEM END line) holds text besides its marker: the network operator (Go's pem.Decode) would skip", "keep the marker alone"),
])
def test_text_on_a_begin_or_end_line_is_refused_unquoted(begin, end, says, advice):
    bundle = _marked(ca_pem(), begin, end)
    with pytest.raises(AddressError) as info:
        check_certificates_only(bundle)
    assert says in str(info.value) and advice in info.value.fix and "Hunter2" not in str(info.value)


def test_trailing_blanks_on_the_marker_lines_are_fine():
    bundle = _marked(ca_pem(), " \t", "  ")
    check_certificates_only(bundle)
    assert len(_pem_blocks(bundle)) == 1


def test_the_operator_reads_no_block_whose_end_line_holds_more():
    # Go's pem.Decode (golang/go src/encoding/pem/pem.go): "The line must end with only whitespace."
    cert = ca_pem()
    assert len(_pem_blocks(cert)) == 1 and len(_pem_blocks(cert.replace("\n", "\r\n"))) == 1
    assert _pem_blocks(_marked(cert, end=" # note")) == []
    assert _pem_blocks(_marked(cert, begin=" # note")) == []
    assert len(_pem_blocks(_marked(cert, end=" # note") + cert)) == 1  # the next block is still read
    assert _pem_blocks("x" + cert) == []  # BEGIN at the start of a line only


def test_the_cli_refuses_a_password_on_the_end_line_and_deploys_nothing(project_copy, run_cli, tmp_path):
    path = project_copy / "stacks" / "Pulumi.aks-proxy.yaml"
    text = path.read_text()
    assert "    -----END CERTIFICATE-----\n" in text
    path.write_text(text.replace("    -----END CERTIFICATE-----\n", "    -----END CERTIFICATE----- # proxy admin password: Hunter2Hunter2\n", 1))
    code, out, err = run_cli("render", "--stack", "aks-proxy", "--out", str(tmp_path / "out"), "--project", str(project_copy))
    assert code == 1 and "(a PEM END line) names a password" in " ".join(err.split())
    assert "Hunter2" not in out + err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("after", ["# pw: hunter2x", "Passwort hunter2x", "key=abcdef", "MIIEvQIBADAN\nBgkqhkiG9w0B\nAQEFAASCBKcw\nggSjAgEAAoIB",
                                   "MIIE vQIB ADAN Bgkq hkiG 9w0B AQEF AASC BKcw ggSj AgEA AoIB", "-----BEGIN CERTIFICATE-----\nMIIB\nproxy password Hunter2x"])
def test_more_secret_shapes_outside_the_blocks_keep_the_rotate_advice(after):
    with pytest.raises(AddressError) as info:
        check_certificates_only(ca_pem() + after + "\n")
    assert "change that password" in info.value.fix or "rotate that key" in info.value.fix
    assert "hunter2x" not in str(info.value) and "MIIE" not in str(info.value)


def test_openssl_text_and_titles_stay_allowed():
    cert = ca_pem()
    bundle = f"# Corp Proxy CA\nCorp Proxy CA\n=============\n{cert}Public-Key: (256 bit)\nGlobalSign Root CA R3 Issued 2009\n{cert}"
    check_certificates_only(bundle)
    assert bundle_as_deployed(bundle) == cert + cert


def test_a_key_body_under_certificate_lines_gets_the_rotate_advice():
    body = "MC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    from egress.targets.kubernetes.openshift_checks import ProxyValidationError, validate_trust_bundle
    with pytest.raises(ProxyValidationError) as info:
        validate_trust_bundle("user-ca-bundle", {"ca-bundle.crt": f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"})
    assert "malformed certificate" in str(info.value)
    from egress.pem import NOT_A_CERTIFICATE_FIX
    assert "may be key material" in NOT_A_CERTIFICATE_FIX and "rotate that key" in NOT_A_CERTIFICATE_FIX


# -- 2: query parameters and connection strings that carry credentials ---------------------------------------------------
@pytest.mark.parametrize("text, secret", [
    ("https://gitlab.example.com/api/v4/projects?private_token=pw9SECRET", "pw9SECRET"),
    ("https://x.example/cb?access-token=pw9SECRET", "pw9SECRET"), ("https://x.example/?client-secret=pw9SECRET", "pw9SECRET"),
    ("https://x.example/?sessionToken=pw9SECRET", "pw9SECRET"), ("https://x.example/?a=1&passphrase=pw9SECRET", "pw9SECRET"),
    ("https://x.example/?Authorization=pw9SECRET", "pw9SECRET"), ("https://x.example/cb?code_verifier=pw9SECRET", "pw9SECRET"),
    ("https://x.example/cb#access_token=pw9SECRET&state=1", "pw9SECRET"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=pw9SECRET+/==;EndpointSuffix=core.windows.net", "pw9SECRET"),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=pw9SECRET=", "pw9SECRET"),
    ("BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022&sig=pw9SECRET", "pw9SECRET"),
])
def test_more_credential_parameters_are_hidden(text, secret):
    shown = redact(text)
    assert secret not in shown and HIDDEN in shown


@pytest.mark.parametrize("text", ["status;code=403", "tcp;auth=ok", "https://x.example/?view=full&SharedAccessKeyName=root",
                                  "Endpoint=sb://ns/;SharedAccessKeyName=root"])
def test_parameters_that_are_no_credentials_are_shown(text):
    assert redact(text) == text


def test_an_own_entry_reference_with_a_token_parameter_is_not_exported(project_copy, run_cli):
    path = project_copy / "stacks" / "Pulumi.kkp.yaml"
    text = path.read_text()
    assert "  egress-matrix:platforms:" in text
    path.write_text(text.replace("config:\n", "config:\n  egress-matrix:entries:\n    - {id: tix, destination: tickets.example.com, protocol: tcp, "
                                 "ports: [443], purpose: Tickets, owner: team-a, reference: 'https://tickets.example/1?private_token=S3cr3tZZ'}\n", 1))
    code, out, err = run_cli("export", "--for", "proxy", "--stack", "kkp", "--project", str(project_copy))
    assert "S3cr3tZZ" not in out + err


# -- 3: a token before a host without a password is masked wherever an error shows the value -----------------------------
@pytest.mark.parametrize("config", [
    {"platforms": ["openshift"], "offlineRegistry": f"{TOKEN}@registry.example.com:5000"},
    {"platforms": ["openshift"], "noProxy": [f"{TOKEN}@registry.example.com"]},
    {"platforms": ["openshift"], "vsphereEndpoints": [f"{TOKEN}@vc.example.com"]},
    {"platforms": ["aks"], "entries": [{"id": "x", "destination": f"{TOKEN}@github.com", "protocol": "tcp", "ports": [443],
                                        "purpose": "p", "owner": "o", "reference": "r"}]},
])
def test_a_token_before_a_host_is_refused_without_showing_it(config):
    with pytest.raises(EgressError) as info:
        profile_from_config(config, "f", "s")
    assert "ghp_" not in str(info.value) and "ghp_" not in repr(getattr(info.value, "value", ""))


def test_a_short_user_and_an_image_digest_are_still_shown():
    from egress.redact import redact_value
    assert redact_value("git@github.com") == "git@github.com"
    digest = "averylongimagename-squid@sha256:" + "a" * 64
    assert redact_value(digest) == digest


# -- 4: egress init --force shows no comment or value that names and gives a secret --------------------------------------
def test_comments_values_and_anchors_that_hold_a_secret_are_hidden():
    text = ("# proxy login for the lab: alice / S3cr3t-Lab!\n# the proxy password is Hunter2Hunter2\n"
            "# Proxy URL, without credentials: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'\n"
            "config:\n  egress-matrix:httpProxy: http://proxy.corp:3128  # Authorization: Bearer eyJhbGciOiJIUzI1NiJ9\n"
            "  egress-matrix:clusterName: &p hunter2pass\n  egress-matrix:proxyCredentials: *p\n  myapp:env: 'DB_PASSWORD=hunter2'\n"
            "  egress-matrix:noProxy: [.corp.example.com]\n")
    shown = shown_stack_text(text)
    for secret in ("S3cr3t-Lab", "Hunter2Hunter2", "eyJhbGci", "hunter2pass", "DB_PASSWORD=hunter2"):
        assert secret not in shown, secret
    assert "# Proxy URL, without credentials: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'\n" in shown
    assert "  egress-matrix:noProxy: [.corp.example.com]\n" in shown


# -- 5: an '@' in a destination's path is an npm scope, not credentials --------------------------------------------------
def _entry(destination: str) -> dict:
    return {"platforms": ["aks"], "entries": [{"id": "npm", "destination": destination, "protocol": "tcp", "ports": [443],
                                               "purpose": "npm types", "owner": "team-a", "reference": "NPM-1"}]}


def test_an_npm_scope_in_the_path_is_no_credentials():
    profile_from_config(_entry("registry.npmjs.org/@types/"), "f", "s")


def test_a_token_in_the_authority_is_still_refused():
    with pytest.raises(ProfileError) as info:
        profile_from_config(_entry(f"{TOKEN}@registry.npmjs.org/x"), "f", "s")
    assert "carries credentials" in str(info.value) and "ghp_" not in str(info.value)


# -- the corpus cases of this review ------------------------------------------------------------------------------------
CASES = [case for case in CORPUS if case["name"].startswith("fx17s2-")]


def test_the_review_cases_are_in_the_corpus():
    assert len(CASES) >= 5 and all(case.get("absent") for case in CASES)

"""Issue 17 review (secrets): what a replaced stack file, a CA bundle, an own entry's URL and a misspelt or unknown key may
show. Each test holds a secret the review saw printed, and asserts it appears nowhere."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from egress.addresses import AddressError, parse_url
from egress.errors import ProfileError
from egress.pem import bundle_as_deployed, check_certificates_only
from egress.profile import profile_from_config
from egress.stack_shown import shown_stack_text

from test_kubernetes_target import ca_pem

CORPUS = yaml.safe_load((Path(__file__).parent / "bad_inputs" / "cases.yaml").read_text())
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQKEYBODYSECRET"


# -- C1: egress init --force shows the replaced file through the reader's hiding rules ---------------------------------
OLD_STACK = f"""# proxy login alice:pw4SECRET
config:
  egress-matrix:platforms: [kkp]
  egress-matrix:httpProxy: http://alice:pw1SECRET@proxy.corp:3128
  egress-matrix:proxyCredentials: alice:pw2SECRET
  egress-matrix:PROXY_CREDENTIALS: pw5SECRET
  egress-matrix:proxyPasword: Winter2024!
  egress-matrix:entries:
    - id: x
      destination: "https://pw6SECRETtoken@artifactory.contoso.example/repo"
  egress-matrix:proxycredentials:
    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAA
  egress-matrix:proxyTrustedCa: |
    -----BEGIN PRIVATE KEY-----
    {KEY_BODY}
    -----END PRIVATE KEY-----
"""
SECRETS = ("pw1SECRET", "pw2SECRET", "pw4SECRET", "pw5SECRET", "Winter2024", "pw6SECRET", KEY_BODY)


def test_init_force_shows_no_secret_of_the_replaced_file(project_copy, run_cli):
    (project_copy / "stacks" / "Pulumi.x2.yaml").write_text(OLD_STACK)
    code, out, err = run_cli("init", "x2", "-p", "kkp", "-t", "kubernetes", "--node-sources", "10.0.0.0/16", "--http-proxy",
                             "http://proxy.corp:3128", "--set", "kkpSeed=s", "--set", "kkpDatacenter=d", "--no-input", "--force",
                             "--project", str(project_copy))
    assert code == 0, err
    for secret in SECRETS:
        assert secret not in out and secret not in err, secret
    assert "-  egress-matrix:httpProxy: (hidden)" in err and "-  egress-matrix:proxyCredentials: (hidden)" in err
    assert "-  egress-matrix:proxyTrustedCa: (PEM text, not shown)" in err and "-      destination: (hidden)" in err
    assert "-    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAA" in err  # a ciphertext is encrypted already
    assert "+  egress-matrix:httpProxy: http://proxy.corp:3128" in err  # the new file's lines are shown as written


def test_the_shown_text_leaves_the_written_file_alone():
    text = "config:\n  egress-matrix:platforms: [aks]\n  # Proxy URL, without credentials: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'\n"
    assert shown_stack_text(text) == text
    assert shown_stack_text("config:\n  egress-matrix:colour: red\n") == "config:\n  egress-matrix:colour: (hidden)\n"


# -- C2 / C3: nothing outside the certificate blocks of proxyTrustedCa is deployed; secret-like text there is refused --
@pytest.mark.parametrize("outside, says", [
    ("Proxy login: http://svc-proxy:pw1SECRET@proxy.corp.example.com:8080 (password pw2SECRET)", "holds a URL or host with credentials"),
    ("proxy password pw2SECRET", "names a password, token or credential"),
    (KEY_BODY, "holds base64 text outside a PEM block: it may be a private key's body"),
])
@pytest.mark.parametrize("before", [True, False])
def test_secret_like_text_outside_the_blocks_is_refused_unquoted(outside, says, before):
    bundle = f"{outside}\n{ca_pem()}" if before else f"{ca_pem()}{outside}\n"
    with pytest.raises(AddressError) as info:
        check_certificates_only(bundle)
    message = str(info.value)
    assert says in message and f"line {1 if before else bundle.count(chr(10))}" in message
    assert "pw1SECRET" not in message and "pw2SECRET" not in message and KEY_BODY not in message
    assert "change that password" in message or "rotate that key" in message


def test_comment_and_title_lines_are_kept_out_of_the_deployed_bundle():
    # as OpenShift's own trusted-ca-bundle ('# <CA name>') and curl's cacert.pem (a title and '=====') write them
    cert = ca_pem()
    bundle = f"# Corp Proxy CA\nCorp Proxy CA\n=============\n{cert}\n# Second\n{cert}"
    check_certificates_only(bundle)
    assert bundle_as_deployed(bundle) == cert + cert
    assert bundle_as_deployed(cert) == cert  # nothing outside: as written
    profile = profile_from_config({"platforms": ["aks"], "proxyTrustedCa": bundle}, "f", "s")
    assert profile.proxy_trusted_ca == cert + cert


def _aks_proxy(project_copy: Path, old: str, new: str) -> None:
    path = project_copy / "stacks" / "Pulumi.aks-proxy.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_aks_output_carries_no_comment_line(project_copy, run_cli, tmp_path):
    _aks_proxy(project_copy, "  egress-matrix:proxyTrustedCa: |\n", "  egress-matrix:proxyTrustedCa: |\n    # Example Corp CA (exported 2026-01-01)\n")
    code, out, err = run_cli("render", "--stack", "aks-proxy", "--out", str(tmp_path / "out"), "--project", str(project_copy))
    assert code == 0, err
    config = json.loads((tmp_path / "out" / "kubernetes" / "aks-http-proxy-config.json").read_text())
    trusted = base64.b64decode(config["trustedCa"]).decode()
    assert trusted.startswith("-----BEGIN CERTIFICATE-----") and "Example Corp CA" not in trusted


def test_a_login_line_before_the_certificate_is_refused_by_the_cli(project_copy, run_cli, tmp_path):
    _aks_proxy(project_copy, "  egress-matrix:proxyTrustedCa: |\n", "  egress-matrix:proxyTrustedCa: |\n    Proxy login: "
               "http://svc-proxy:pw1SECRET@proxy.corp.example.com:8080 (password pw2SECRET)\n")
    code, out, err = run_cli("render", "--stack", "aks-proxy", "--out", str(tmp_path / "out"), "--project", str(project_copy))
    assert code == 1 and "line 1 (outside the CERTIFICATE blocks) holds a URL or host with credentials" in " ".join(err.split())
    assert "pw1SECRET" not in out + err and "pw2SECRET" not in out + err and not (tmp_path / "out").exists()


def test_an_image_reference_is_checked_for_credentials_like_every_setting():
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], "egressProxyImage": "http://alice:pw7SECRET@registry.example.com/squid:6"}, "f", "s")
    assert "credentials" in str(info.value) and "pw7SECRET" not in str(info.value)
    digest = "registry.example.com:5000/ubuntu/squid:6.10@sha256:" + "a" * 64
    assert profile_from_config({"platforms": ["aks"], "egressProxyImage": digest}, "f", "s").egress_proxy_image == digest


# -- C4: a URL destination with credentials: refused first, never quoted -------------------------------------------------
@pytest.mark.parametrize("url", ["https://pw1SECRETtoken@artifactory.contoso.example/repo", "https://u:pw2SECRET@host.example.com/x",
                                 "https://u:pw2SECRET@host.example.com:8443/x", "http://u@pw2SECRET@host.example.com", "u:pw2SECRET@host.example.com/x"])
def test_parse_url_refuses_credentials_without_quoting_them(url):
    with pytest.raises(AddressError) as info:
        parse_url(url)
    assert "the URL carries credentials" in info.value.problem and "change that password or token" in info.value.fix
    assert "SECRET" not in str(info.value)


def test_a_url_with_an_at_in_its_path_is_no_credentials():
    assert parse_url("https://registry.example.com/v2/@scope/pkg").host == "registry.example.com"


# -- C5 / C6: a (nearly) secret key gets the secret's fix; an unknown key's value is never shown --------------------------
@pytest.mark.parametrize("key", ["egress-matrix:proxycredentials", "egress_matrix:proxyCredentials", "egress-matrix:proxyCrendentials",
                                 "egress-matrix:PROXY_CREDENTIALS"])
def test_a_nearly_secret_key_gets_the_secret_fix(tmp_path, key):
    from egress.profile import load_profile

    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(f"config:\n  egress-matrix:platforms: [aks]\n  {key}: alice:pw1SECRET\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path, "t")
    message = str(info.value)
    assert "pw1SECRET" not in message and "'(hidden)'" in message
    assert "Fix: remove the line and run: pulumi config set --secret egress-matrix:proxyCredentials '<value>' (and rotate the value" in message


@pytest.mark.parametrize("key", ["proxyPasword", "proxyPw", "colour"])
def test_an_unknown_setting_is_never_shown_by_the_program_either(key):
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], key: "Winter2024!"}, "f", "s")
    assert info.value.value == "(hidden)" and "Winter2024" not in str(info.value)


# -- the corpus cases of this review: each secret they hold is nowhere in the output -------------------------------------
CASES = [case for case in CORPUS if case["name"].startswith("fx17s-")]


def test_the_review_cases_are_in_the_corpus():
    assert len(CASES) >= 10 and all(case.get("absent") for case in CASES)

"""Where the policies find proxy settings in Kubernetes objects as the engine presents them: a Secret normalised by
pulumi-kubernetes' Check carries its values base64-encoded in ``data`` (``stringData`` moved there), so the policies
decode it before judging the URLs and noProxy lists in it."""
from __future__ import annotations

import base64

from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from egress.deployed import DeployedResource
from egress_policies import proxy_url_valid, trusted_ca_valid
from egress_policies.objects import env_data, no_proxy_lists, proxy_urls

URL = "http://proxy.example.com:3128"
NO_PROXY = "localhost,127.0.0.1,.svc,10.0.0.0/16"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def checked_secret(**env: str) -> dict:
    """The kubeadm proxy-env Secret the way the provider's Check hands it on: every value base64 in ``data``."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": "egress-proxy-env", "namespace": "kube-system"},
            "data": {key: _b64(value) for key, value in env.items()}}


def resource(props: dict) -> DeployedResource:
    return DeployedResource(type=f"kubernetes:core/v1:{props['kind']}", name="cluster-proxy-secret-kube-system-egress-proxy-env",
                            urn="urn:pulumi:dev::egress-matrix::kubernetes:core/v1:Secret::x", props=props)


def test_a_checked_secrets_urls_are_read_decoded():
    secret = resource(checked_secret(HTTP_PROXY=URL, HTTPS_PROXY=URL, NO_PROXY=NO_PROXY))
    assert list(proxy_urls(secret)) == [("data.HTTP_PROXY", URL), ("data.HTTPS_PROXY", URL)]
    assert list(no_proxy_lists(secret)) == [("data.NO_PROXY", ["localhost", "127.0.0.1", ".svc", "10.0.0.0/16"])]
    assert proxy_url_valid.violations(secret) == []  # before: the base64 text was judged as the URL


def test_a_broken_url_in_a_checked_secret_is_found_and_judged_with_credentials_redacted():
    secret = resource(checked_secret(HTTP_PROXY="http://svc:s3cret@proxy.example.com:99999", HTTPS_PROXY=URL))
    assert proxy_url_valid.violations(secret) == [
        'data.HTTP_PROXY: invalid httpProxy URI: failed to validate port for URL "http://(credentials hidden)@proxy.example.com:99999": '
        'invalid port number: 99999']


def test_the_policy_reads_a_checked_secret_as_the_engine_presents_it():
    """Through the pack's validate, with the props behind the SDK's proxy (Mapping, not dict) as in a real run."""
    props = checked_secret(HTTP_PROXY="172.30.0.10:3128", HTTPS_PROXY=URL)
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    args = ResourceValidationArgs("kubernetes:core/v1:Secret", unknown_checking_proxy(props), "urn:pulumi:dev::egress-matrix::kubernetes:core/v1:Secret::x",
                                  "x", options, None, None)
    found = []
    proxy_url_valid.POLICY.validate(args, lambda message, urn=None: found.append(message))
    assert found == ['data.HTTP_PROXY: invalid httpProxy URI: parse "172.30.0.10:3128": invalid URI for request']


def test_string_data_wins_over_data_and_undecodable_values_are_left_out():
    props = checked_secret(HTTP_PROXY="http://old.example.com:3128")
    props["data"]["BLOB"] = "not base64!"
    props["data"]["BINARY"] = base64.b64encode(b"\xff\xfe").decode()
    props["stringData"] = {"HTTP_PROXY": URL}
    secret = resource(props)
    assert env_data(secret) == {"HTTP_PROXY": URL}
    assert list(proxy_urls(secret)) == [("stringData.HTTP_PROXY", URL)]


def test_a_configmaps_data_is_text_not_base64():
    config_map = resource({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "egress-proxy-env", "namespace": "kube-system"},
                           "data": {"HTTP_PROXY": URL, "NO_PROXY": NO_PROXY}})
    assert list(proxy_urls(config_map)) == [("data.HTTP_PROXY", URL)]
    assert trusted_ca_valid.violations(config_map) == []

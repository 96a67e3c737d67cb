"""The subscription the default azure-native provider deploys to, checked against the stack's azureSubscriptionId.

The program creates IP Groups with the default provider, builds their resource ids from azureSubscriptionId, and decides
from it whether an existing policy is in another subscription (and so needs its own provider). Credentials pointing at
another subscription would make each of those decisions against the wrong one. The default provider is checked, not
replaced by an explicit one: a provider change on deployed resources would show as their replacement.

One invoke (``azure-native:authorization:getClientConfig``), before anything is registered. Offline (the SDK's mocks)
nothing answers it: no subscription in the answer means the check cannot be made, and it is skipped.
"""
from __future__ import annotations

from typing import Optional

import pulumi_azure_native as azure_native

from egress.errors import EgressError

INVOKE = "azure-native:authorization:getClientConfig"


class AzureSubscriptionError(EgressError):
    """The azure-native provider's credentials are for another subscription than the stack's azureSubscriptionId."""


def check_default_subscription(expected: Optional[str]) -> None:
    """Raise AzureSubscriptionError when the default provider's subscription is not ``expected`` (ids compare
    case-insensitively). Nothing to check without ``expected`` or without an answer."""
    if not expected:
        return
    actual = azure_native.authorization.get_client_config().subscription_id
    if not actual or actual.lower() == expected.lower():
        return
    raise AzureSubscriptionError(
        f"the azure-native provider deploys to subscription {actual}, but egress-matrix:azureSubscriptionId is {expected}: the IP Groups "
        f"would be created in {actual} while the rules name them in {expected}, and whether an existing policy is in another "
        f"subscription would be decided against the wrong one. Nothing was registered. Fix: point the provider at {expected} "
        f"(az account set --subscription {expected}, ARM_SUBSCRIPTION_ID={expected}, or pulumi config set azure-native:subscriptionId "
        f"{expected}), or set egress-matrix:azureSubscriptionId to {actual} if the stack belongs there")

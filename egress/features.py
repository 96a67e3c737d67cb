"""Features that bring others along: a platform file may write a feature as ``{title, needs: [...], citation}`` when it
cannot run without another (AKS's Istio plug-in CA and app routing's Key Vault certificates run on the Key Vault provider
add-on). A stack that turns such a feature on gets what it needs too: the dependency is a fact of the platform, so
asking the stack to repeat it would only let the two drift apart. Pure."""
from __future__ import annotations

from typing import Iterable

from .models import Catalog


def with_needs(catalog: Catalog, features: Iterable[str]) -> tuple[str, ...]:
    """``features`` as given, then every feature they need (transitively, each once, in the order first needed)."""
    out = list(dict.fromkeys(features))
    for feature in out:  # the list grows while it is walked: each added feature's needs are added in turn
        spec = catalog.feature_needs.get(feature)
        out += [need for need in (spec.needs if spec else ()) if need not in out]
    return tuple(out)

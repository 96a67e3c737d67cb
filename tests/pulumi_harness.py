"""What the Pulumi engine would receive, recorded under the SDK's own mock runtime (shared by the component tests)."""
from __future__ import annotations

from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor


class RecordingMonitor(MockMonitor):
    """Keeps what the engine would receive: type, name, parent, dependencies and inputs of every registration."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.registrations = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        inputs = rpc.deserialize_properties(request.object)
        self.registrations.append({"type": request.type, "name": request.name, "urn": response.urn, "provider": request.provider,
                                   "parent": request.parent, "dependencies": list(request.dependencies), "inputs": inputs,
                                   "delete_before_replace": request.deleteBeforeReplace})
        return response


def by_name(registrations):
    return {r["name"]: r for r in registrations}

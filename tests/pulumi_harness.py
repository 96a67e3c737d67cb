"""What the Pulumi engine would receive, recorded under the SDK's own mock runtime (shared by the component tests)."""
from __future__ import annotations

import asyncio

from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import wait_for_rpcs


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


def settle(loop: asyncio.AbstractEventLoop) -> None:
    """Run everything a program run under the mocks queued (registrations, invokes, outputs) to its end, as the SDK does
    after a program: what reached the mocks is then all that ever will, whatever the machine's speed."""
    loop.run_until_complete(wait_for_rpcs())


def resolved(loop: asyncio.AbstractEventLoop, output):
    """An Output's value: the loop runs until its future is done (no timer)."""
    return loop.run_until_complete(output.future())

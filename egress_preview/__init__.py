"""The main job end to end, offline: the Pulumi program under the SDK's mocks, the policy pack over what it
registered (as the engine presents it), and what the CLI makes of both (``egress preview``, ``egress diff``).

Unlike ``egress`` (the pure core), this package imports Pulumi; the CLI loads it only for the commands that need it.
"""

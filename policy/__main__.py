"""The egress-matrix policy pack. Constructing the PolicyPack starts the analyzer's gRPC server and never returns:
everything else lives in ``egress_policies`` (one policy per module)."""
from pulumi_policy import EnforcementLevel, PolicyPack

from egress_policies import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.ADVISORY,
           description="egress-matrix: the deployed firewalls and proxies allow exactly what the stack's cited requirements need, "
                       "safely and within the providers' limits.")

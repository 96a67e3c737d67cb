"""Pulumi ComponentResources: thin adapters from the core's compiled plans to provider resources."""

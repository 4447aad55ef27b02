"""A reference data plane: a test and development implementation of the data-plane contract.

It does what docs/contract.md says the data plane does with each field of ``twp.yaml``, and
nothing it does not say, so the project's end-to-end tests and the upstream Gateway API
conformance suite can run without the Titanium proxy. It is not the product's data plane.
Run it as ``python3 -m titanium_gateway.reference_dataplane --config-dir DIR``
(docs/reference-dataplane.md). Needs the ``dataplane`` extra (aiohttp, prometheus_client, h2).
"""

from titanium_gateway.reference_dataplane.server import VERSION, DataPlane, DataPlaneThread

__all__ = ["DataPlane", "DataPlaneThread", "VERSION"]

"""The Gateway API features titanium-gateway claims: ONE list for the GatewayClass
``status.supportedFeatures`` the controller writes and for the conformance run's
``-supported-features`` (``conformance/supported-features.txt`` lists the same names; a test
checks the two). Only what the controller and the data plane implement and the upstream suite has
exercised (conformance/README.md)."""

from __future__ import annotations

#: sorted by name (the GatewayClass field MUST be sorted in ascending order)
SUPPORTED_FEATURES: tuple[str, ...] = (
    "BackendTLSPolicy",
    "BackendTLSPolicySANValidation",
    "Gateway",
    "GatewayAddressEmpty",
    "GatewayInfrastructure",
    "GatewayPort8080",
    "GatewayStaticAddresses",
    "HTTPRoute",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendTimeout",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRouteParentRefPort",
    "HTTPRoutePathRewrite",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "ListenerSet",
    "ReferenceGrant",
)

__all__ = ["SUPPORTED_FEATURES"]

"""The Gateway API features titanium-gateway claims: ONE list for the GatewayClass
``status.supportedFeatures`` the controller writes and for the conformance run's
``-supported-features``. ``conformance/supported-features.txt`` is generated from this module
(:func:`supported_features_file`; ``make generate``, ``hack/generate.py --check`` in the
tests). Only what the controller and the data plane implement and the upstream suite has
exercised (conformance/README.md); the features not claimed are listed with the reason.
"""

from __future__ import annotations

from titanium_gateway import kinds

#: the claimed features by conformance level, in the order the file lists them
CLAIMED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Core of the GATEWAY-HTTP profile", ("Gateway", "HTTPRoute", "ReferenceGrant")),
    ("Core of the GATEWAY-GRPC profile", ("GRPCRoute",)),
    ("Extended", (
        "BackendTLSPolicy",
        "BackendTLSPolicySANValidation",
        "ListenerSet",
        "HTTPRouteNamedRouteRule",
        "HTTPRouteHostRewrite",
        "HTTPRoutePathRewrite",
        "HTTPRouteRequestMirror",
        "HTTPRouteRequestPercentageMirror",
        "HTTPRouteMethodMatching",
        "HTTPRouteQueryParamMatching",
        "HTTPRouteRequestTimeout",
        "HTTPRouteBackendTimeout",
        "HTTPRouteResponseHeaderModification",
        "HTTPRouteParentRefPort",
        "GatewayPort8080",
        "GatewayInfrastructure",
        "GatewayStaticAddresses",
        "GatewayAddressEmpty",
        "HTTPRouteBackendProtocolH2C",
        "HTTPRouteBackendProtocolWebSocket",
    )),
)

#: features NOT claimed (conformance/README.md): (the features, why)
NOT_CLAIMED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("HTTPRouteSchemeRedirect", "HTTPRoutePortRedirect", "HTTPRoutePathRedirect"),
     "their tests redirect without a hostname; path also uses ReplacePrefixMatch"),
    (("HTTPRouteRequestMultipleMirrors",), "the data plane mirrors to one cluster"),
    (("HTTPRouteDestinationPortMatching", "GatewayHTTPListenerIsolation"), ""),
    (("HTTPRouteBackendRequestHeaderModification",), ""),
    # (the other route kinds' features are named as the kinds: render/otherroutes.py)
    (tuple(row.kind for row in kinds.OTHER_ROUTES), "answered in their status as not accepted, not served"),
)

#: sorted by name (the GatewayClass field MUST be sorted in ascending order)
SUPPORTED_FEATURES: tuple[str, ...] = tuple(sorted(name for _, names in CLAIMED for name in names))

#: the file the conformance runs read the claimed features from
FEATURES_FILE = "conformance/supported-features.txt"


def supported_features_file() -> str:
    """The text of ``conformance/supported-features.txt``: one claimed feature per line, by
    level, then the features not claimed and why (comments)."""
    lines = [
        "# Gateway API features titanium-gateway claims (--supported-features), one per line: the same",
        "# list as the GatewayClass status.supportedFeatures the controller writes. GENERATED from",
        "# titanium_gateway/render/features.py by hack/generate.py (make generate): edit that module.",
        "# Only what the controller and the data plane implement AND the suite has exercised.",
    ]
    for level, names in CLAIMED:
        lines.append(f"# {level}:")
        lines.extend(names)
    lines.append("# NOT claimed (conformance/README.md):")
    for names, why in NOT_CLAIMED:
        text = ", ".join(names)
        lines.append(f"#   {text:<36}  ({why})" if why else f"#   {text}")
    return "\n".join(lines) + "\n"


__all__ = ["CLAIMED", "NOT_CLAIMED", "SUPPORTED_FEATURES", "FEATURES_FILE", "supported_features_file"]

"""The data planes: which one serves what, and what a Gateway's own data plane is called.

Two modes (``RenderOptions.data_plane_mode``, the controller's ``--data-plane-mode``):

* ``shared``: one data plane (the chart's Deployment and Service) serves every Gateway of our
  classes and every Ingress: one document, plane key ``""``;
* ``per-gateway``: each Gateway of our classes has a data plane of its own, in its namespace,
  serving only its listeners and the routes attached to them (plane key ``namespace/name``);
  Ingresses stay on the chart's shared data plane (``""``).

The render decides which Gateway gets a plane (``render/gateway.py``); the controller creates
the plane's objects under the names :func:`plane_names` gives (GEP-1762: ``<gateway>-<class>``),
and the render reads the Gateway's address from the Service of that name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

#: the plane key of the shared data plane (the chart's)
SHARED = ""
SHARED_MODE = "shared"
PER_GATEWAY = "per-gateway"
MODES = (SHARED_MODE, PER_GATEWAY)

#: longest base name: a Service name is a DNS-1035 label of at most 63 characters, and the
#: ConfigMap parts add ``-part-<n>``
MAX_BASE = 52
_NOT_LABEL = re.compile(r"[^a-z0-9-]")


def per_gateway(mode: str) -> bool:
    """Whether ``mode`` gives each Gateway of ours a data plane of its own (the one place the
    mode is decided: the render, the controller and the offline commands ask it)."""
    return mode == PER_GATEWAY


def every_cluster(mode: str, key: str) -> bool:
    """Whether the document of the data plane ``key`` holds every cluster of the render (the one
    data plane of ``shared`` mode), not only those its routes name."""
    return key == SHARED and not per_gateway(mode)


def gateway_plane(namespace: str, name: str) -> str:
    """The plane key of a Gateway's own data plane."""
    return f"{namespace}/{name}"


@dataclass(frozen=True)
class PlaneNames:
    """The names of the objects of one Gateway's data plane (all in the Gateway's namespace)."""

    base: str

    @property
    def deployment(self) -> str:
        return self.base

    @property
    def service(self) -> str:
        return self.base

    @property
    def config_map(self) -> str:
        return self.base

    def part(self, n: int) -> str:
        return f"{self.base}-part-{n}"

    @property
    def tls_secret(self) -> str:
        return f"{self.base}-tls"

    @property
    def admin_secret(self) -> str:
        return f"{self.base}-admin"


def plane_names(gateway: str, class_name: str) -> PlaneNames:
    """``<gateway>-<class>`` (GEP-1762) as a DNS-1035 label: a name that is not one (a dot, an
    upper-case letter, a leading digit) or is longer than :data:`MAX_BASE` is cut and given a
    hash of the original, so two Gateways never share names."""
    wanted = f"{gateway}-{class_name}"
    clean = _NOT_LABEL.sub("-", wanted.lower())
    if clean == wanted and len(clean) <= MAX_BASE and clean[:1].isalpha() and not clean.endswith("-"):
        return PlaneNames(clean)
    digest = hashlib.sha256(wanted.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    head = clean[:MAX_BASE - 11].strip("-")
    if not head[:1].isalpha():
        head = ("gw-" + head)[:MAX_BASE - 11].rstrip("-")
    return PlaneNames(f"{head}-{digest}")


#: The labels of every object the controller creates for a Gateway's data plane: who manages it
#: (its informers select these), which Gateway it serves (GEP-1762), and which controller (a
#: hash of ``--controller-name``: two releases never take each other's objects).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "titanium-gateway"
GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
CONTROLLER_LABEL = "gateway.titaniumproxy.com/controller"


def controller_label(controller_name: str) -> str:
    """The value of :data:`CONTROLLER_LABEL` for a controller name (a label value cannot hold
    the name's ``/``)."""
    return hashlib.sha256(controller_name.encode()).hexdigest()[:16]


def managed_selector(controller_name: str) -> str:
    """The label selector of the objects this controller created for Gateways' data planes."""
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{CONTROLLER_LABEL}={controller_label(controller_name)}"


def is_managed(labels: object) -> bool:
    """Whether an object's labels say a titanium-gateway controller created it for a Gateway."""
    return isinstance(labels, Mapping) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY and GATEWAY_NAME_LABEL in labels

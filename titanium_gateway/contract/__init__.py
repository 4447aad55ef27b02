"""The data-plane contract (docs/contract.md) as a library: no sockets, no clock of its own.

What a data plane does with each field of ``twp.yaml``, for the reference data plane
(``titanium_gateway.reference_dataplane``) and for tools that explain a config:

* :func:`load_config` / :func:`load_directory`: root + parts -> a validated, immutable
  :class:`Config` (:class:`ConfigError` with file and position; :class:`PartNotReady` for a
  part that is missing or whose sha256 differs).
* :func:`select_route` -> ``(winner, losers)``; :func:`decide` -> :class:`Decision` (route id,
  outcome: forward to weighted clusters / redirect with its Location / direct answer / 404,
  transforms, policies, losing routes in order, and ``why``: the winner's match conditions);
  :func:`checks` (each condition of a route's match against a request).
* :func:`apply_request_transforms`, :func:`apply_response_transforms`.
* :func:`evaluate` (one policy), :class:`FixedWindowLimiter`, :func:`ext_auth_admits`.
* :func:`select_certificate` (SNI), :func:`choose_cluster`, :class:`Balancer`,
  :func:`affinity_value`.
"""

from titanium_gateway.contract.balancing import Balancer, affinity_value, choose_cluster
from titanium_gateway.contract.certificates import select_certificate, wildcard_covers
from titanium_gateway.contract.files import load_directory
from titanium_gateway.contract.load import ConfigError, PartNotReady, load_config, sha256_hex
from titanium_gateway.contract.model import (
    Cluster,
    Config,
    Destination,
    DirectResponse,
    Forward,
    Redirect,
    Route,
)
from titanium_gateway.contract.policies import (
    Answer,
    AskExtAuth,
    FixedWindowLimiter,
    evaluate,
    ext_auth_admits,
)
from titanium_gateway.contract.redirect import location
from titanium_gateway.contract.routing import (
    Check,
    Decision,
    ForwardTo,
    NotFound,
    RedirectTo,
    Request,
    Respond,
    Selection,
    checks,
    decide,
    select_route,
)
from titanium_gateway.contract.transforms import apply_request_transforms, apply_response_transforms

__all__ = [
    "Answer", "AskExtAuth", "Balancer", "Check", "Cluster", "Config", "ConfigError", "Decision", "Destination",
    "DirectResponse", "FixedWindowLimiter", "Forward", "ForwardTo", "NotFound", "PartNotReady", "Redirect",
    "RedirectTo", "Request", "Respond", "Route", "Selection", "affinity_value", "apply_request_transforms",
    "apply_response_transforms", "checks", "choose_cluster", "decide", "evaluate", "ext_auth_admits", "load_config",
    "load_directory", "location", "select_certificate", "select_route", "sha256_hex", "wildcard_covers",
]

"""The data-plane contract (docs/contract.md) as a library: no sockets, no clock of its own.

What a data plane does with each field of ``twp.yaml``, for the reference data plane
(``titanium_gateway.reference_dataplane``) and for tools that explain a config. The document
is read by the twp format's one reader (:mod:`titanium_gateway.twp.load`) into the values the
render builds (:mod:`titanium_gateway.twp.model`); this library says what they do:

* :func:`load_config` / :func:`load_directory`: root + parts -> a validated, immutable
  :class:`Config` (:class:`ConfigError` with file and position; :class:`PartNotReady` for a
  part that is missing or whose sha256 differs); :mod:`.values` reads its values in the data
  plane's units (seconds, networks, the default algorithm).
* :func:`select_route` -> ``(winner, losers)``; :func:`decide` -> :class:`Decision` (route id,
  outcome: forward to weighted clusters / redirect with its Location / direct answer / 404,
  transforms, policies, losing routes in order, and ``why``: the winner's match conditions);
  :func:`checks` (each condition of a route's match against a request).
* :func:`apply_request_transforms`, :func:`apply_response_transforms`.
* :func:`evaluate` (one policy), :class:`FixedWindowLimiter`, :func:`ext_auth_admits`.
* :func:`select_certificate` (SNI), :func:`choose_cluster`, :class:`Balancer`,
  :func:`affinity_value`.

What the data plane does with each kind of the document is registered by the kind's class:
the actions in ``routing.ACTIONS``, the transforms in ``transforms.ON_REQUEST`` /
``transforms.ON_RESPONSE``, the policies in ``policies.POLICIES``; a class of the model
registered nowhere fails ``tests/dataplane/test_rule_coverage.py``.
"""

from titanium_gateway.contract.balancing import Balancer, affinity_value, choose_cluster
from titanium_gateway.contract.certificates import select_certificate, wildcard_covers
from titanium_gateway.contract.files import load_directory
from titanium_gateway.contract.policies import (
    Answer,
    AskExtAuth,
    FixedWindowLimiter,
    evaluate,
    ext_auth_admits,
)
from titanium_gateway.contract.redirect import location
from titanium_gateway.contract.request import Request
from titanium_gateway.contract.routing import (
    Check,
    Decision,
    ForwardTo,
    NotFound,
    RedirectTo,
    Respond,
    Selection,
    checks,
    decide,
    select_route,
)
from titanium_gateway.contract.transforms import apply_request_transforms, apply_response_transforms
from titanium_gateway.twp.load import Config, ConfigError, PartNotReady, load_config, sha256_hex

__all__ = [
    "Answer", "AskExtAuth", "Balancer", "Check", "Config", "ConfigError", "Decision", "FixedWindowLimiter",
    "ForwardTo", "NotFound", "PartNotReady", "RedirectTo", "Request", "Respond", "Selection", "affinity_value",
    "apply_request_transforms", "apply_response_transforms", "checks", "choose_cluster", "decide", "evaluate",
    "ext_auth_admits", "load_config", "load_directory", "location", "select_certificate", "select_route", "sha256_hex",
    "wildcard_covers",
]

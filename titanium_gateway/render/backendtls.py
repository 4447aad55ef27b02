"""BackendTLSPolicy (Gateway API v1): TLS from the data plane to a Service's backends, honoured or
failing closed.

:class:`BackendTlsPolicies` (built once per render from the snapshot) decides, for each policy in
precedence order (the oldest ``creationTimestamp``, then ``namespace/name``), which targets it
takes: a ``targetRef`` to a core Service, with ``sectionName`` = the name of one of its ports or
none for every port. A policy naming a target an earlier policy took is ``Conflicted`` and applies
nowhere. A backend (Service port) uses the policy of its port name, else the Service's.

What the policy asks becomes the cluster's settings (:meth:`BackendTlsPolicies.settings`):
``useHttps`` and ``httpClient.tls`` with ``caFile`` (the ``ca.crt`` of the ConfigMaps in
``validation.caCertificateRefs``, concatenated into one PEM file of the TLS Secret of each data
plane whose clusters use it) or
``systemRoots`` (``wellKnownCACertificates: System``), ``serverName`` (``validation.hostname``)
and ``subjectAltNames``. A policy that cannot be honoured (a reference that does not resolve, a
bad PEM, an unknown well-known set, a SAN type, option or field this controller does not know)
makes the backend's cluster *refused*: it has no destinations, so every request to it answers
503, and its traffic is never sent in plaintext. The HTTPRoute is not changed (its references
resolve); the policy's status says why.

Each policy's conditions are decided here (``Policy.accepted``, ``Policy.resolved``); its status,
written once the documents are made, is render/backendtlsstatus.py's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.precedence import creation_timestamp
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status.conditions import bound_message
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    ClusterSettings,
    SubjectAltName,
)

API_VERSION = kinds.GATEWAY_API_VERSION
KIND = kinds.BACKEND_TLS_POLICY.kind
CA_KEY = "ca.crt"
#: The Gateway API keeps at most this many ancestors in a policy's status.
MAX_ANCESTORS = 16
#: The fields of a BackendTLSPolicy spec and its validation in Gateway API v1.6 (any other comes
#: from a newer release: the policy is not honoured, rather than honoured in part).
_SPEC_FIELDS = frozenset({"targetRefs", "validation", "options"})
_VALIDATION_FIELDS = frozenset({"caCertificateRefs", "wellKnownCACertificates", "hostname", "subjectAltNames"})
_PRECISE_HOSTNAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_URI = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:\S+")

#: A condition decided here: (status, reason, message).
Outcome = tuple[bool, str, str]
#: (namespace, Service, port name or "" for every port)
Target = tuple[str, str, str]


@dataclass
class Policy:
    """One BackendTLSPolicy and what it is worth."""

    namespace: str
    name: str
    obj: Mapping[str, Any]
    #: the Services it targets, by (namespace, name), and the targets it names
    services: list[tuple[str, str]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    accepted: Outcome = (True, "Accepted", "the policy is accepted")
    resolved: Outcome = (True, "ResolvedRefs", "all references are resolved")
    #: the cluster settings it adds (None: it cannot be honoured, see ``refused``)
    tls: ClusterSettings | None = None
    #: why its backends are refused ("" when it is honoured)
    refused: str = ""
    #: the CA file it adds to the TLS Secret: (file name, PEM)
    ca_file: tuple[str, bytes] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class BackendTlsPolicies:
    """The policies of one render (see the module doc)."""

    def __init__(self, snapshot: Snapshot, secret_namespaces: Iterable[str] = ()) -> None:
        self._readable = tuple(secret_namespaces)
        self._snapshot = snapshot
        self.policies: list[Policy] = []
        #: target -> the policy that takes it
        self._by_target: dict[Target, Policy] = {}
        #: (namespace, Service) -> the policies that target it (for the status)
        self.by_service: dict[tuple[str, str], list[Policy]] = {}
        objs = [p for p in snapshot.backend_tls_policies.values() if f.is_mapping(p)]
        if not objs:
            return
        objs.sort(key=_precedence)
        for obj in objs:
            meta = f.metadata(obj)
            name, ns = f.name_of(meta), f.namespace_of(meta)
            if not name or ns is None:
                continue
            policy = Policy(ns, name, obj)
            self._read(policy)
            self.policies.append(policy)

    def __bool__(self) -> bool:
        return bool(self.policies)

    # -- one policy -------------------------------------------------------------------------
    def _read(self, policy: Policy) -> None:
        spec = f.mapping(policy.obj.get("spec"))
        validation = f.mapping(spec.get("validation"))
        invalid: list[str] = [f"spec.{f.plain(k)} is not supported" for k in spec if k not in _SPEC_FIELDS]
        invalid += [f"spec.validation.{f.plain(k)} is not supported" for k in validation if k not in _VALIDATION_FIELDS]
        self._targets(policy, spec, invalid)
        if f.mapping(spec.get("options")):
            invalid.append("spec.options are not supported (this controller defines no TLS options)")
        hostname = f.text(validation.get("hostname")).lower()
        if not hostname or len(hostname) > 253 or not _PRECISE_HOSTNAME.fullmatch(hostname):
            invalid.append(f"validation.hostname {f.brief(validation.get('hostname'))} is not a valid host name")
        sans = self._subject_alt_names(validation, invalid)
        refs = f.items(validation.get("caCertificateRefs"))
        well_known = validation.get("wellKnownCACertificates")
        system_roots = False
        if refs and well_known not in (None, ""):
            invalid.append("validation.caCertificateRefs and validation.wellKnownCACertificates exclude each other")
        elif not refs:
            if well_known == "System":
                system_roots = True
            elif well_known in (None, ""):
                invalid.append("validation names no CA certificates (caCertificateRefs or wellKnownCACertificates)")
            else:
                invalid.append(f"validation.wellKnownCACertificates {f.brief(well_known)} is not supported"
                               " (System is)")
        pem = self._ca_certificates(policy, refs) if refs else b""
        if invalid:
            message = bound_message("; ".join(invalid))
            policy.refused = f"BackendTLSPolicy {policy.key}: {message}"
            if policy.accepted[1] != "Conflicted":
                policy.accepted = (False, "Invalid", message)
        if policy.refused:
            return
        files: tuple[tuple[str, str], ...] = ()
        if pem:
            file = f"backendtls.{policy.namespace}.{policy.name}.ca.crt"
            policy.ca_file = (file, pem)
            files = (("caFile", file),)
        policy.tls = ClusterSettings(use_https=True, tls=files, server_name=hostname, subject_alt_names=sans,
                                     system_roots=system_roots)

    def _targets(self, policy: Policy, spec: Mapping[str, Any], invalid: list[str]) -> None:
        """The targets the policy takes (a later policy on one of them is Conflicted)."""
        mine: list[Target] = []
        for i, raw in enumerate(f.items(spec.get("targetRefs"))):
            ref = f.mapping(raw)
            group, kind, name = f.string(ref.get("group")), f.string(ref.get("kind")), f.text(ref.get("name"))
            if group != "" or kind != "Service" or not name:
                invalid.append(f"targetRefs[{i}] {f.shown(group)}/{f.shown(kind)} {f.brief(name)} is not a core Service")
                continue
            target = (policy.namespace, name, f.text(ref.get("sectionName")))
            if target not in mine:
                mine.append(target)
            if (policy.namespace, name) not in policy.services:
                policy.services.append((policy.namespace, name))
                self.by_service.setdefault((policy.namespace, name), []).append(policy)
        policy.targets = mine
        taken = [t for t in mine if t in self._by_target]
        if taken:
            ns, svc, section = taken[0]
            first = self._by_target[taken[0]]
            what = f"port {section} of Service {ns}/{svc}" if section else f"Service {ns}/{svc}"
            policy.accepted = (False, "Conflicted", f"{what} is already the target of the older BackendTLSPolicy "
                                                    f"{first.key}")
            return
        for t in mine:
            self._by_target[t] = policy

    @staticmethod
    def _subject_alt_names(validation: Mapping[str, Any], invalid: list[str]) -> tuple[SubjectAltName, ...]:
        out: list[SubjectAltName] = []
        for i, raw in enumerate(f.items(validation.get("subjectAltNames"))):
            san = f.mapping(raw)
            kind = f.string(san.get("type"))
            if kind == "Hostname":
                host = f.text(san.get("hostname")).lower()
                if host and len(host) <= 253 and _PRECISE_HOSTNAME.fullmatch(host.removeprefix("*.")):
                    out.append(SubjectAltName("Hostname", host))
                    continue
                invalid.append(f"validation.subjectAltNames[{i}].hostname {f.brief(san.get('hostname'))} is not a"
                               " valid host name")
            elif kind == "URI":
                uri = f.text(san.get("uri"))
                if uri and _URI.fullmatch(uri):
                    out.append(SubjectAltName("URI", uri))
                    continue
                invalid.append(f"validation.subjectAltNames[{i}].uri {f.brief(san.get('uri'))} is not an absolute URI")
            else:
                invalid.append(f"validation.subjectAltNames[{i}].type {f.brief(kind)} is not supported"
                               " (Hostname and URI are)")
        return tuple(out)

    def _ca_certificates(self, policy: Policy, refs: list[Any]) -> bytes:
        """The PEM of every valid reference; the problems into the policy's conditions."""
        pems: list[bytes] = []
        problems: list[tuple[str, str]] = []
        for i, raw in enumerate(refs):
            ref = f.mapping(raw)
            group, kind, name = f.string(ref.get("group")), f.string(ref.get("kind")), f.text(ref.get("name"))
            if group != "" or kind != "ConfigMap":
                problems.append(("InvalidKind", f"caCertificateRefs[{i}] {f.shown(group)}/{f.shown(kind)} "
                                                f"{f.brief(name)} is not a ConfigMap"))
                continue
            pem, why = self._config_map_ca(policy.namespace, name)
            if pem is None:
                problems.append(("InvalidCACertificateRef", f"caCertificateRefs[{i}]: {why}"))
            else:
                pems.append(pem)
        if problems:
            reason = problems[0][0]
            policy.resolved = (False, reason, bound_message("; ".join(m for _, m in problems)))
            if not pems and policy.accepted[1] != "Conflicted":
                policy.accepted = (False, "NoValidCACertificate", "no CA certificate reference is valid")
            # an invalid reference is never skipped: the backend would trust less than asked, or
            # the wrong anchors; its connections fail (the Gateway API: a 5xx)
            policy.refused = f"BackendTLSPolicy {policy.key}: {policy.resolved[2]}"
        return b"".join(p if p.endswith(b"\n") else p + b"\n" for p in pems)

    def _config_map_ca(self, namespace: str, name: str) -> tuple[bytes | None, str]:
        unreadable = self._snapshot.unreadable.get("ConfigMap")
        if unreadable:
            return None, f"ConfigMaps cannot be read ({unreadable})"
        cm = self._snapshot.config_maps.get(f"{namespace}/{name}")
        if not f.is_mapping(cm):
            if self._readable and namespace not in self._readable:
                return None, (f"ConfigMap {namespace}/{name} cannot be read: the controller reads ConfigMaps in "
                              f"{', '.join(self._readable)} only (--secret-namespaces; chart values "
                              "controller.secretNamespaces, controller.secretsClusterWide)")
            return None, f"ConfigMap {namespace}/{name} not found"
        text = f.mapping(cm.get("data")).get(CA_KEY)
        if not isinstance(text, str) or not text.strip():
            return None, f"ConfigMap {namespace}/{name} has no {CA_KEY}"
        try:
            data = text.encode("ascii")
            anchors = x509.load_pem_x509_certificates(data)
        except Exception:  # noqa: BLE001 - any failure means "not PEM certificates"
            anchors = []
        if not anchors:
            return None, f"ConfigMap {namespace}/{name}: {CA_KEY} is not PEM certificates"
        return data, ""

    # -- backends ---------------------------------------------------------------------------
    def policy_for(self, namespace: str, service: str, port_name: str) -> Policy | None:
        """The policy a Service port's backends use: its port's, else the Service's."""
        if not self._by_target:
            return None
        if port_name:
            hit = self._by_target.get((namespace, service, port_name))
            if hit is not None:
                return hit
        return self._by_target.get((namespace, service, ""))

    def settings(self, namespace: str, service: str, port_name: str, settings: ClusterSettings) -> ClusterSettings:
        """``settings`` of a backend with what its policy asks (the same object when none does)."""
        policy = self.policy_for(namespace, service, port_name)
        if policy is None:
            return settings
        if policy.tls is None:
            return dataclasses.replace(settings, use_https=True, refused=policy.refused)
        tls = policy.tls
        if settings is DEFAULT_SETTINGS:
            return tls
        return dataclasses.replace(settings, use_https=True, tls=tls.tls, server_name=tls.server_name,
                                   subject_alt_names=tls.subject_alt_names, system_roots=tls.system_roots)

    def ca_files(self) -> dict[str, bytes]:
        """file name -> PEM of the CA file of each policy that has one."""
        return dict(p.ca_file for p in self.policies if p.ca_file is not None)


def _precedence(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = f.metadata(obj)
    return creation_timestamp(obj), f"{f.text(meta.get('namespace')) or 'default'}/{f.text(meta.get('name'))}"

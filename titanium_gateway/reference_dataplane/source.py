"""The config directory: load ``twp.yaml``, its parts and the files it names; reload on change.

:meth:`ConfigSource.poll` compares a signature of the directory (the ``..data`` symlink of a
projected volume, and the identity, size and mtime of ``twp.yaml`` and of every file the last
root named) with the last one it tried; when it changed, it loads everything again. The new
state replaces the old one only when ALL of it loads: a bad document, a part that is missing
or whose sha256 differs, a PFX or PEM file that is missing or unusable keeps the previous state
(the reason is logged and kept in ``last_error``), and the load is tried again on the next
change, or every ``retry_interval`` seconds while failing. Files that changed on disk but
not in content (a rewrite with the same bytes) reload nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from titanium_gateway.contract.files import read_file
from titanium_gateway.contract.values import client_tls
from titanium_gateway.reference_dataplane.tls import (
    H2_ALPN,
    CertificateError,
    client_context,
    server_context_from_pfx,
)
from titanium_gateway.twp import model as m
from titanium_gateway.twp.load import ROOT_FILE, Config, ConfigError, RouteCache, load_config

log = logging.getLogger("titanium.reference_dataplane.config")


@dataclass(frozen=True)
class LoadedState:
    """One loaded config and what it needs at run time (built once per load)."""

    config: Config
    root: bytes
    server_contexts: dict[str, ssl.SSLContext] = field(repr=False)  # by certificate file
    client_contexts: dict[m.UpstreamTls | None, ssl.SSLContext] = field(repr=False)
    #: the same checks, offering h2 by ALPN (the HTTP/2 client's)
    h2_client_contexts: dict[m.UpstreamTls | None, ssl.SSLContext] = field(repr=False, default_factory=dict)
    generation: int = 0
    loaded_at: float = 0.0

    @property
    def config_hash(self) -> str:
        return self.config.config_hash

    def certificates(self) -> tuple[tuple[m.Certificate, ...], dict[str, ssl.SSLContext]]:
        return self.config.certificates, self.server_contexts


class NotReady(Exception):
    """A file the config names is missing: not loaded yet."""


class Unchanged(Exception):
    """The files changed on disk but not in content: nothing to reload."""


class ConfigSource:
    def __init__(self, directory: str | os.PathLike[str], retry_interval: float = 5.0) -> None:
        self.directory = Path(directory)
        self.retry_interval = retry_interval
        self.last_error = ""
        self.attempts = 0
        self.generation = 0
        self._names: tuple[str, ...] = ()
        self._signature: tuple | None = None
        self._failed_at: float | None = None
        self._loaded_digest: bytes | None = None  # of every byte the loaded state was built from
        self._routes = RouteCache()  # a reload reads only the routes that changed
        self._contexts: dict[tuple, ssl.SSLContext] = {}  # by what they are made of (the last load's)

    def signature(self) -> tuple:
        parts: list[object] = []
        try:
            parts.append(os.readlink(self.directory / "..data"))
        except OSError:
            parts.append(None)
        for name in (ROOT_FILE, *self._names):
            try:
                st = os.stat(self.directory / name)
                parts.append((name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                parts.append((name, None))
        return tuple(parts)

    def poll(self, force: bool = False) -> LoadedState | None:
        """A new state when the directory changed and everything loads; None otherwise."""
        sig = self.signature()
        retry = self._failed_at is not None and time.monotonic() - self._failed_at >= self.retry_interval
        if not force and not retry and sig == self._signature:
            return None
        self._signature = sig
        self.attempts += 1
        try:
            state = self._load()
        except Unchanged:
            self.last_error = ""
            self._failed_at = None
            self._signature = self._after_load(sig)
            return None
        except (ConfigError, NotReady, CertificateError, OSError) as exc:
            message = str(exc)
            if message != self.last_error:
                log.warning("config not loaded, keeping the previous one: %s", message)
            self.last_error = message
            self._failed_at = time.monotonic()
            self._signature = self._after_load(sig)  # the names may have changed
            return None
        self.last_error = ""
        self._failed_at = None
        self._signature = self._after_load(sig)
        return state

    def _after_load(self, before: tuple) -> tuple:
        """The signature the next poll compares with: that of the files the load just named, but
        with the ``..data`` link and ``twp.yaml`` as they were BEFORE the load read them. A change
        that lands while the load runs (a projected volume's ``..data`` swap between reading
        ``twp.yaml`` and the end of the load) then shows on the next poll, instead of being taken
        for the content just loaded and missed until the next change."""
        return before[:2] + self.signature()[2:]

    def _load(self) -> LoadedState:
        root = read_file(self.directory, ROOT_FILE)
        if root is None:
            self._names = ()
            raise NotReady(f"{self.directory / ROOT_FILE} does not exist yet")
        named: list[str] = []
        digest = hashlib.sha256(root)

        def read_part(name: str) -> bytes | None:
            named.append(name)
            data = read_file(self.directory, name)
            digest.update(b"\0%s\0%s" % (name.encode(), data or b""))
            return data

        try:
            config = load_config(root, read_part, cache=self._routes)
        finally:
            self._names = tuple(named)
        self._names = tuple(named) + config.files
        files: dict[str, bytes] = {}
        for name in config.files:
            data = read_file(self.directory, name)
            if data is None:
                raise NotReady(f"{name}: named by the config but not in {self.directory} yet")
            files[name] = data
            digest.update(b"\0%s\0%s" % (name.encode(), data))
        if digest.digest() == self._loaded_digest:
            raise Unchanged
        made: dict[tuple, ssl.SSLContext] = {}

        def context(key: tuple, make: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
            """The context of the last load made of the same settings and bytes, else a new one."""
            key += tuple(hashlib.sha256(files[n]).digest() for n in key[1:] if isinstance(n, str) and n in files)
            if key not in made:
                made[key] = self._contexts[key] if key in self._contexts else make()
            return made[key]

        servers = {c.file: context(("server", c.file), partial(server_context_from_pfx, files[c.file], c.file))
                   for c in config.certificates}
        clients: dict[m.UpstreamTls | None, ssl.SSLContext] = {None: context(("client",), partial(client_context, files, None))}
        h2_clients: dict[m.UpstreamTls | None, ssl.SSLContext] = {
            None: context(("h2client",), partial(client_context, files, None, H2_ALPN))}
        for cluster in config.clusters.values():
            tls = client_tls(cluster)
            if tls is not None and tls not in clients:
                files_key = (tls, tls.ca_file, tls.cert_file, tls.key_file)
                clients[tls] = context(("client", *files_key), partial(client_context, files, tls))
                h2_clients[tls] = context(("h2client", *files_key), partial(client_context, files, tls, H2_ALPN))
        self._contexts = made
        self.generation += 1
        self._loaded_digest = digest.digest()
        return LoadedState(config, root, servers, clients, h2_clients, self.generation, time.time())

"""Client configuration (kubeconfig or in-cluster) from the official ``kubernetes`` package,
without importing its generated client.

Any ``import kubernetes.<something>`` first runs ``kubernetes/__init__.py``, which imports the
whole package: the generated API client (~850 pydantic model modules and ~60 API classes,
~16 MiB of resident memory and ~280 modules) as well as ``dynamic``, ``watch``, ``stream``,
``utils``, ``leaderelection`` and ``informer``. The controller only needs
``kubernetes.client.configuration.Configuration`` (a plain class: stdlib and urllib3) and the
loaders of ``kubernetes.config`` (kubeconfig with exec plugins, auth providers, tokens, client
certificates, CA, ``insecure-skip-tls-verify``, token refresh; in-cluster service account with
its refreshed token file). Those loaders only import ``Configuration`` and, for
``new_client_from_config`` (never called here), ``ApiClient`` from ``kubernetes.client``.

:func:`kubernetes_config` therefore imports exactly those modules, from the installed package,
under their own names, with hollow (not executed) ``kubernetes`` and ``kubernetes.client``
package modules as parents, and removes every ``kubernetes`` module it added from
``sys.modules`` again, so a later ``import kubernetes`` elsewhere in the process gets the real,
complete package. When the package is already imported (tests, tools), or the lean import
fails (a ``kubernetes`` release whose loaders import more of the client), the ordinary import
is used instead: same loaders, more memory.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_loaded: tuple[type, ModuleType] | None = None


class _ApiClientUnavailable:
    """Stands in for ``kubernetes.client.ApiClient`` in the leanly imported loaders: only
    ``new_client_from_config*`` use it, and nothing here calls those."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("kubernetes.client.ApiClient is not loaded (titanium_gateway.kube.kubeconfig)")


def _hollow_package(name: str) -> ModuleType:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    return importlib.util.module_from_spec(spec)  # not executed: no __init__ side effects


def _lean_import() -> tuple[type, ModuleType]:
    before = set(sys.modules)
    try:
        sys.modules["kubernetes"] = _hollow_package("kubernetes")
        client = sys.modules["kubernetes.client"] = _hollow_package("kubernetes.client")
        configuration = importlib.import_module("kubernetes.client.configuration")
        client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
        client.ApiClient = _ApiClientUnavailable  # type: ignore[attr-defined]
        config = importlib.import_module("kubernetes.config")
        return configuration.Configuration, config
    finally:
        for name in [m for m in sys.modules if m not in before and (m == "kubernetes" or m.startswith("kubernetes."))]:
            del sys.modules[name]


def _full_import() -> tuple[type, ModuleType]:
    from kubernetes import client, config

    return client.Configuration, config


def kubernetes_config() -> tuple[type, ModuleType]:
    """``(kubernetes.client.Configuration, the kubernetes.config module)``."""
    global _loaded
    with _lock:
        if _loaded is None:
            if "kubernetes" in sys.modules:
                _loaded = _full_import()
            else:
                try:
                    _loaded = _lean_import()
                except Exception:  # noqa: BLE001 - a kubernetes release that needs more: import it all
                    _loaded = _full_import()
        return _loaded


def new_configuration() -> Any:
    """A fresh ``kubernetes.client.Configuration``."""
    return kubernetes_config()[0]()


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """In-cluster config when running in a pod (and no kubeconfig is given), else the kubeconfig
    file (``kubeconfig``, ``$KUBECONFIG`` or ``~/.kube/config``)."""
    configuration_cls, config = kubernetes_config()
    cfg = configuration_cls()
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=cfg)
            return cfg
        except config.ConfigException:
            pass
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return cfg

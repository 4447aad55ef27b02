"""Small builders of twp.yaml documents for the data-plane tests."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from titanium_gateway.contract import Config, load_config

BACKEND = {"id": "be", "destinations": [{"id": "127.0.0.1:1", "address": "127.0.0.1", "port": 1, "weight": 1,
                                         "useHttps": False}]}


def route(rid: str = "r", order: int = 1, match: dict | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": rid, "order": order, "match": match or {}}
    if not any(k in fields for k in ("clusterId", "clusters", "redirect", "directResponse")):
        fields["clusterId"] = "be"
    out.update(fields)
    return out


def cluster(cid: str = "be", dests: list[dict] | None = None, **fields: Any) -> dict[str, Any]:
    out = {"id": cid, "destinations": copy.deepcopy(BACKEND["destinations"]) if dests is None else dests}
    out.update(fields)
    return out


def dest(address: str, port: int, did: str | None = None, weight: int = 1, https: bool = False) -> dict[str, Any]:
    return {"id": did or f"{address}:{port}", "address": address, "port": port, "weight": weight, "useHttps": https}


def document(routes: list[dict] | None = None, clusters: list[dict] | None = None, listeners: list[dict] | None = None,
             certificates: list[dict] | None = None) -> dict[str, Any]:
    return {
        "schemaVersion": "7.1",
        "listeners": listeners if listeners is not None else [listener(8080)],
        "certificates": {"items": certificates or []},
        "routes": routes if routes is not None else [route()],
        "clusters": clusters if clusters is not None else [cluster()],
    }


def listener(port: int, tls: bool = False) -> dict[str, Any]:
    return {"host": "0.0.0.0", "port": port, "type": "transparent", "decryptSsl": tls}


def dump(doc: dict[str, Any]) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False).encode()


def config(routes: list[dict] | None = None, clusters: list[dict] | None = None, **kw: Any) -> Config:
    return load_config(dump(document(routes, clusters, **kw)))

"""The container env and argv the pod runner builds."""

from __future__ import annotations

import base64
import sys

import pytest

from tools.podrunner.env import EnvNotReady, container_env, expand
from tools.podrunner.images import ImageError, ImageMap

POD = {"metadata": {"name": "web-1", "namespace": "apps", "uid": "u"}, "spec": {"nodeName": "n0"},
       "status": {"podIP": "198.18.1.2"}}
SECRET = {"data": {"token": base64.b64encode(b"s3cret").decode()}}


def env_of(container, secrets=None, cms=None, service_env=None):
    secrets = secrets or {}
    cms = cms or {}
    return container_env(POD, container, config_map=lambda ns, n: cms.get((ns, n)),
                         secret=lambda ns, n: secrets.get((ns, n)), service_env=service_env)


def test_expand():
    assert expand("$(A)-$(B)-$$(A)-$(C)", {"A": "1", "B": "2"}) == "1-2-$(A)-$(C)"


def test_env_sources_in_order():
    container = {"name": "c", "env": [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "token"}}},
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
        {"name": "BOTH", "value": "$(POD_NAME).$(NAMESPACE)"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": "1234"},
    ]}
    env = env_of(container, {("apps", "tok"): SECRET}, {("apps", "cfg"): {"data": {"mode": "fast"}}},
                 {"KUBERNETES_SERVICE_HOST": "198.18.0.1", "KUBERNETES_SERVICE_PORT": "6443"})
    assert env == {"KUBERNETES_SERVICE_HOST": "198.18.0.1", "KUBERNETES_SERVICE_PORT": "1234",
                   "POD_NAME": "web-1", "NAMESPACE": "apps", "TOKEN": "s3cret", "MODE": "fast",
                   "BOTH": "web-1.apps"}


def test_env_missing_reference_waits_unless_optional():
    c = {"name": "c", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "token"}}}]}
    with pytest.raises(EnvNotReady, match='secret "tok" not found'):
        env_of(c)
    with pytest.raises(EnvNotReady, match="key 'other'"):
        env_of({"name": "c", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "other"}}}]},
               {("apps", "tok"): SECRET})
    c["env"][0]["valueFrom"]["secretKeyRef"]["optional"] = True
    assert env_of(c) == {}


def test_env_from_with_prefix():
    c = {"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "X_"},
                                  {"secretRef": {"name": "tok"}}]}
    assert env_of(c, {("apps", "tok"): SECRET}, {("apps", "cfg"): {"data": {"a": "1"}}}) == {"X_a": "1", "token": "s3cret"}


IMAGES = ImageMap.from_dict({
    "variables": {"bin": "/opt/bin"},
    "images": [
        {"match": "registry/echo:*", "entrypoint": ["{bin}/echo"], "cmd": ["--default"], "listens": [3000]},
        {"match": "local/ctl:*", "entrypoint": ["ctl"], "path": {"ctl": ["{python}", "-m", "ctl"]},
         "env": {"PYTHONPATH": "{root}"}},
    ]})


def test_image_argv_docker_semantics():
    echo = IMAGES.find("registry/echo:v1")
    assert echo.listens == [3000]
    assert echo.argv({"image": "registry/echo:v1"}) == ["/opt/bin/echo", "--default"]
    assert echo.argv({"image": "registry/echo:v1", "args": ["-x"]}) == ["/opt/bin/echo", "-x"]
    ctl = IMAGES.find("local/ctl:dev")
    assert ctl.argv({"command": ["ctl", "controller"], "args": ["--v"]}) == [sys.executable, "-m", "ctl", "controller", "--v"]
    assert ctl.env["PYTHONPATH"]
    with pytest.raises(ImageError, match='"sh": executable file not found'):
        ctl.argv({"image": "local/ctl:dev", "command": ["sh", "-c", "rm -rf /"]})
    with pytest.raises(ImageError, match="no program for image"):
        IMAGES.find("docker.io/library/nginx:latest")

"""Test doubles shared by integration, reliability tests and benchmarks.

- ``tests.support.apiserver.FakeApiServer``: an in-process Kubernetes API server (REST + watch).
- ``tests.support.dataplane.StubDataPlane`` / ``DataPlaneFleet``: stub data-plane pods.
- ``tests.support.release.seed_release``: what ``helm install`` leaves (objects + RBAC).
- ``tests.support.fixtures``: pytest fixtures over the three.

See ``tests/support/README.md``.
"""

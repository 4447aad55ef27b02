"""The local control plane itself (hack/kube/up.sh): what pods rely on is there without a
stand-in. kube-controller-manager's root-ca-certificate-publisher-controller publishes the
ConfigMap ``kube-root-ca.crt`` (the cluster CA, from ``--root-ca-file``) in every namespace,
the one every pod with a service-account token mounts, and puts it right when it is changed."""

from __future__ import annotations

import contextlib

from tests.cluster.conftest import KubeSession, wait_for
from tests.support.kubeapi import KubeApiError

ROOT_CA = "kube-root-ca.crt"


def test_every_namespace_gets_the_cluster_ca_from_the_controller_manager(kube: KubeSession) -> None:
    cluster = kube.cluster
    api = cluster.api
    ca = cluster.ca_file.read_text()
    ns = kube.next_name("rootca")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        cm = wait_for(lambda: api.get_object("ConfigMap", ns, ROOT_CA), 30, what=f"{ns}/{ROOT_CA}")
        assert cm["data"] == {"ca.crt": ca}
        # written by kube-controller-manager (its field manager), not by any audited client such
        # as a test harness or a pod runner standing in for it
        assert {m.get("manager") for m in cm["metadata"].get("managedFields") or []} == {"kube-controller-manager"}
        assert not [e for e in cluster.audit.events() if e.get("verb") == "create"
                    and (e.get("objectRef") or {}).get("namespace") == ns
                    and (e.get("objectRef") or {}).get("name") == ROOT_CA]
        # a changed copy is put back
        api.patch("ConfigMap", ns, ROOT_CA, {"data": {"ca.crt": "not the CA"}})
        wait_for(lambda: (api.get_object("ConfigMap", ns, ROOT_CA) or {}).get("data") == {"ca.crt": ca}, 30,
                 what=f"{ns}/{ROOT_CA} put right")
    finally:
        with contextlib.suppress(KubeApiError):
            api.delete("Namespace", None, ns)

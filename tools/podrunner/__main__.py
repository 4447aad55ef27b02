"""``python3 -m tools.podrunner``: the node agent and load-balancer stand-in of the local cluster.

Run it inside the cluster's network namespace with ``nsenter --net=/run/netns/tgk-<id>`` (not
``ip netns exec``, which would give it a mount namespace of its own: the pod namespaces it
creates would then be invisible outside it, e.g. to hack/kube/down.sh). It runs until SIGTERM or
SIGINT, then stops every pod it started and removes their namespaces and addresses.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import logging
import os
import signal
import sys
import threading

from titanium_gateway.kube.rest import load_configuration
from tools.podrunner.images import ImageMap
from tools.podrunner.kube import RunnerApi
from tools.podrunner.kubeletapi import KubeletApiServer
from tools.podrunner.loadbalancer import LoadBalancer
from tools.podrunner.network import AddressPool, Network
from tools.podrunner.runner import Runner

log = logging.getLogger("podrunner")


def cluster_id(cluster_dir: str) -> str:
    """The id hack/kube/up.sh derives from the cluster directory (NETWORK.md)."""
    return hashlib.sha256(os.path.abspath(cluster_dir).encode()).hexdigest()[:8]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m tools.podrunner", description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    p.add_argument("--images", required=True, help="the image map (YAML, see tools/podrunner/images.py)")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="an image-map variable")
    p.add_argument("--state-dir", required=True, help="volumes and logs of the pods")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cluster-dir", help="the hack/kube cluster directory (names the pod namespaces)")
    g.add_argument("--netns-prefix", help="pod namespace name prefix, e.g. tgp-0123abcd-")
    p.add_argument("--node-name", default="titanium-node-0")
    p.add_argument("--node-ip", default="198.18.0.1", help="the bridge address (pods' default route)")
    p.add_argument("--bridge", default="tgbr0")
    p.add_argument("--pod-network", default="198.18.0.0/16", help="the bridge's network (pod address prefix)")
    p.add_argument("--pod-range", default="198.18.1.1-198.18.239.254")
    p.add_argument("--lb-range", default="198.18.250.1-198.18.250.254")
    p.add_argument("--lb-static-range", default="198.18.251.1-198.18.251.254",
                   help="addresses given only to a Service that asks for one (spec.loadBalancerIP)")
    p.add_argument("--no-load-balancer", action="store_true", help="run pods only")
    p.add_argument("--load-balancer-class", default=None,
                   help="also serve Services with this spec.loadBalancerClass")
    p.add_argument("--api-host", default=None, help="KUBERNETES_SERVICE_HOST for pods (default: --node-ip)")
    p.add_argument("--api-port", type=int, default=6443)
    p.add_argument("--kubelet-port", type=int, default=10250)
    p.add_argument("--sync-period", type=float, default=10.0, help="seconds between volume re-syncs")
    p.add_argument("--config-map-and-secret-change-detection-strategy", dest="change_detection",
                   choices=("Watch", "Cache"), default="Watch",
                   help="the kubelet's setting of that name: Watch (its default) reads ConfigMaps and Secrets from "
                        "watch caches; Cache fetches those a pod references at each sync of the pod")
    p.add_argument("--bind-after", type=float, default=5.0,
                   help="bind a pod no scheduler bound within this many seconds")
    p.add_argument("--backoff", type=float, default=10.0, help="first crash-loop back-off (doubles to 300 s)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("titanium_gateway").setLevel(logging.WARNING)
    variables = {}
    for item in args.var:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"--var {item!r}: expected NAME=VALUE", file=sys.stderr)
            return 2
        variables[name] = value
    images = ImageMap.load(args.images, variables)
    prefix = args.netns_prefix or f"tgp-{cluster_id(args.cluster_dir)}-"
    net = Network(bridge=args.bridge, gateway=args.node_ip,
                  prefix_len=ipaddress.ip_network(args.pod_network).prefixlen, netns_prefix=prefix)
    api = RunnerApi(load_configuration(args.kubeconfig), qps=100, burst=200, user_agent="podrunner")
    runner = Runner(api, node_name=args.node_name, node_ip=args.node_ip, images=images, network=net,
                    pod_pool=AddressPool.parse(args.pod_range), state_dir=os.path.abspath(args.state_dir),
                    sync_period=args.sync_period, bind_after=args.bind_after, api_host=args.api_host,
                    api_port=args.api_port, kubelet_port=args.kubelet_port, backoff_initial=args.backoff,
                    change_detection=args.change_detection)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    kubelet = KubeletApiServer((args.node_ip, args.kubelet_port), args.node_name, runner.log_path,
                               runner.log_alive).start()
    lb = None
    try:
        runner.start()
        if not args.no_load_balancer:
            lb = LoadBalancer(api, net, AddressPool.parse(args.lb_range),
                              load_balancer_class=args.load_balancer_class,
                              static_pool=AddressPool.parse(args.lb_static_range)).start()
        log.info("running: node %s (%s), pod namespaces %s*, kubelet API :%s", args.node_name, args.node_ip,
                 prefix, args.kubelet_port)
        stop.wait()
    finally:
        log.info("stopping: every pod, the load balancer and the kubelet API")
        if lb is not None:
            lb.stop()
        runner.stop()
        kubelet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

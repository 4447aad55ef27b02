"""A node agent for the local cluster (hack/kube): pods as local processes, and a load-balancer
stand-in. See tools/podrunner/README.md."""

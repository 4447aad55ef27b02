// Command kube runs one Kubernetes control-plane component per process, built from the
// published k8s.io/kubernetes modules, for the tests and local development (hack/kube/*.sh).
//
//	kube apiserver --etcd-dir DIR -- <kube-apiserver flags>   kube-apiserver with an embedded etcd
//	kube kube-controller-manager <flags>
//	kube kube-scheduler <flags>
//	kube kubectl <args>                                       (also as a symlink named kubectl)
//	kube init DIR                                             certificates, tokens, kubeconfigs
//	kube etcd-compact [--endpoint URL]                        compact etcd to its current revision
//
// The program is also dispatched by the name it is called under (a symlink kubectl -> kube).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as the upstream binaries
)

const usage = `usage: kube <component> [args...]
components: apiserver, kube-controller-manager, kube-scheduler, kubectl, init, etcd-compact, version`

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kube" {
		if len(os.Args) < 2 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		name = os.Args[1]
		os.Args = os.Args[1:] // the component's own command line: argv[0] is its name
	}
	switch name {
	case "apiserver", "kube-apiserver":
		os.Exit(runAPIServer(os.Args[1:]))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubectl":
		os.Exit(cli.Run(kubectl.NewDefaultKubectlCommand()))
	case "init":
		os.Exit(runInit(os.Args[1:]))
	case "etcd-compact":
		os.Exit(runCompact(os.Args[1:]))
	case "version":
		fmt.Println(versionString())
	case "-h", "--help", "help":
		fmt.Println(usage)
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n%s\n", name, usage)
		os.Exit(2)
	}
}

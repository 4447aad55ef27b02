package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// runAPIServer starts an embedded etcd member (loopback only, no fsync: test data), then the
// real kube-apiserver command with the flags after "--", pointed at that etcd. It returns the
// API server's exit code once it has stopped (SIGTERM/SIGINT are the API server's own
// handling), closing etcd afterwards.
func runAPIServer(args []string) int {
	fs := flag.NewFlagSet("apiserver", flag.ContinueOnError)
	dir := fs.String("etcd-dir", "", "etcd data directory (required)")
	client := fs.String("etcd-client-url", "http://127.0.0.1:2379", "etcd client URL (loopback)")
	peer := fs.String("etcd-peer-url", "http://127.0.0.1:2380", "etcd peer URL (loopback, unused by anyone)")
	logFile := fs.String("etcd-log", "", "etcd log file (default: stderr)")
	quota := fs.Int64("etcd-quota-bytes", 8<<30, "etcd backend quota")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "kube apiserver: --etcd-dir is required")
		return 2
	}
	rest := fs.Args() // what follows "--": the kube-apiserver flags

	etcd, err := startEtcd(*dir, *client, *peer, *logFile, *quota)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube apiserver: embedded etcd: %v\n", err)
		return 1
	}
	defer etcd.Close()

	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(append([]string{"--etcd-servers=" + *client}, rest...))
	return cli.Run(cmd)
}

func startEtcd(dir, clientURL, peerURL, logFile string, quota int64) (*embed.Etcd, error) {
	cu, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("--etcd-client-url: %w", err)
	}
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, fmt.Errorf("--etcd-peer-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "titanium"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true // a throw-away test cluster: speed over durability
	cfg.QuotaBackendBytes = quota
	cfg.LogLevel = "warn"
	// NewConfig leaves this 0 (the default lives in etcd's flag set): every request would be
	// logged as slow.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	if logFile != "" {
		cfg.LogOutputs = []string{logFile}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(120 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 120s")
	}
}

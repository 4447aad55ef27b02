package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
)

// runCompact compacts the embedded etcd's history up to its current revision (physically, so
// the compaction is complete when it returns). Watches and lists from an older resourceVersion
// then get 410 Gone from etcd. It prints the revision.
func runCompact(args []string) int {
	fs := flag.NewFlagSet("etcd-compact", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:2379", "etcd client URL")
	timeout := fs.Duration("timeout", 30*time.Second, "overall timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// gRPC's own warnings (a connection cancelled on close) are noise for a one-shot command.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 10 * time.Second,
		Context: ctx, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: %v\n", err)
		return 1
	}
	defer c.Close()
	// Any read answers with the store's current revision in its header.
	resp, err := c.Get(ctx, "/titanium-compact-probe", clientv3.WithCountOnly())
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: reading the revision: %v\n", err)
		return 1
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		fmt.Fprintf(os.Stderr, "etcd-compact: compacting to %d: %v\n", rev, err)
		return 1
	}
	fmt.Println(rev)
	return 0
}

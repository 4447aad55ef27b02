// Package suite runs the upstream Gateway API v1.2.1 conformance suite with the suite's own
// flags (-gateway-class, -supported-features, -conformance-profiles, -run-test, -skip-tests,
// -report-output, -organization, -project, -url, -version, -contact, ...) and time limits suited
// to a small local cluster. conformance/build.sh compiles it with `go test -c`.
package suite

import (
	"flag"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance"
)

// Our time limits. The suite's defaults (config.DefaultTimeoutConfig) are sized for cloud load
// balancers: 300 s for the namespaces, 180 s for a Gateway address or condition, 60 s for route
// conditions. On the local cluster every object settles within seconds, and a test that fails
// waits out its limit, so the limits here are shorter. MaxTimeToConsistency stays at or below the
// suite's conformance ceiling (30 s). A zero keeps the suite's default.
var (
	namespacesReady = flag.Duration("titanium.namespaces-ready", 240*time.Second, "NamespacesMustBeReady")
	gatewayStatus   = flag.Duration("titanium.gateway-status", 60*time.Second, "Gateway address, condition and class acceptance waits")
	routeStatus     = flag.Duration("titanium.route-status", 30*time.Second, "route, listener and observed-generation waits")
	consistency     = flag.Duration("titanium.consistency", 20*time.Second, "MaxTimeToConsistency (the suite's ceiling is 30s)")
	requestTimeout  = flag.Duration("titanium.request-timeout", 5*time.Second, "RequestTimeout of one HTTP request")
	testTimeout     = flag.Duration("titanium.test-timeout", 45*time.Second, "DefaultTestTimeout")
)

func TestConformance(t *testing.T) {
	opts := conformance.DefaultOptions(t)
	tc := &opts.TimeoutConfig
	tc.NamespacesMustBeReady = *namespacesReady
	tc.GatewayMustHaveAddress = *gatewayStatus
	tc.GatewayMustHaveCondition = *gatewayStatus
	tc.GWCMustBeAccepted = *gatewayStatus
	tc.GatewayStatusMustHaveListeners = *routeStatus
	tc.GatewayListenersMustHaveConditions = *routeStatus
	tc.HTTPRouteMustNotHaveParents = *routeStatus
	tc.HTTPRouteMustHaveCondition = *routeStatus
	tc.RouteMustHaveParents = *routeStatus
	tc.LatestObservedGenerationSet = *routeStatus
	tc.MaxTimeToConsistency = *consistency
	tc.RequestTimeout = *requestTimeout
	tc.DefaultTestTimeout = *testTimeout
	conformance.RunConformanceWithOptions(t, opts)
}

// Package suite runs the upstream Gateway API v1.6.3 conformance suite with the suite's own
// flags (-gateway-class, -supported-features, -conformance-profiles, -run-test, -skip-tests,
// -report-output, -organization, -project, -url, -version, -contact, ...) and time limits suited
// to a small local cluster. conformance/build.sh compiles it with `go test -c`.
package suite

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
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
	listTests       = flag.String("titanium.list-tests", "", "TestListTests: write the suite's tests and their features (JSON) to this file")
	joinNormalized  = flag.Bool("titanium.join-normalized", false, "diagnosis only, writes no report: read every \", \" in a header value the backend received, or of a response, as \",\"")
)

// appendJoinNormalized is the diagnosis run's RoundTripper (-titanium.join-normalized): the
// suite's own one, but every ", " in a header value the echo server reports, and in a response
// header, is read as ",". The data plane joins an appended header value with ", "
// (docs/contract.md), the suite expects
// "old,new"; a test that fails only on that join passes this way, so the run shows that nothing
// else failed. It never writes a report.
type appendJoinNormalized struct {
	inner roundtripper.RoundTripper
}

func (a appendJoinNormalized) CaptureRoundTrip(r roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	req, res, err := a.inner.CaptureRoundTrip(r)
	if req != nil {
		normalizeJoin(req.Headers)
	}
	if res != nil {
		normalizeJoin(res.Headers) // (a ResponseHeaderModifier's add)
	}
	return req, res, err
}

func normalizeJoin(headers map[string][]string) {
	for name, values := range headers {
		for i, v := range values {
			values[i] = strings.ReplaceAll(v, ", ", ",")
		}
		headers[name] = values
	}
}

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
	if *joinNormalized {
		t.Log("DIAGNOSIS RUN (-titanium.join-normalized): header values read with \", \" as \",\"; no report")
		opts.RoundTripper = appendJoinNormalized{&roundtripper.DefaultRoundTripper{Debug: opts.Debug, TimeoutConfig: opts.TimeoutConfig}}
		opts.ReportOutputPath = ""
	}
	conformance.RunConformanceWithOptions(t, opts)
}

// TestListTests writes the suite's own test list (short names, features, provisional) and the
// GATEWAY-HTTP and GATEWAY-GRPC profiles' core and extended features as JSON, for conformance/summary.py:
// -test.run '^TestListTests$' -titanium.list-tests=FILE. Without the flag it does nothing.
func TestListTests(t *testing.T) {
	if *listTests == "" {
		t.Skip("no -titanium.list-tests")
	}
	type entry struct {
		Name        string   `json:"name"`
		Features    []string `json:"features"`
		Provisional bool     `json:"provisional"`
	}
	out := []entry{}
	for _, test := range tests.ConformanceTests {
		e := entry{Name: test.ShortName, Provisional: test.Provisional, Features: []string{}}
		for _, f := range test.Features {
			e.Features = append(e.Features, string(f))
		}
		out = append(out, e)
	}
	profiles := map[string]any{}
	for _, p := range []suite.ConformanceProfile{suite.GatewayHTTPConformanceProfile, suite.GatewayGRPCConformanceProfile} {
		core, extended := []string{}, []string{}
		for f := range p.CoreFeatures {
			core = append(core, string(f))
		}
		for f := range p.ExtendedFeatures {
			extended = append(extended, string(f))
		}
		profiles[string(p.Name)] = map[string][]string{"core": core, "extended": extended}
	}
	doc := map[string]any{"tests": out, "profiles": profiles}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(*listTests, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

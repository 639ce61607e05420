package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ProxyLimits bound what callers of the global resource proxy (worker) can make the worker
// hold, so that no caller can run it, and the workflows it runs, out of memory. They are the
// proxy's proxy.Limits, whose defaults (and their reasons) Default repeats.
type ProxyLimits struct {
	MaxRequestBodyBytes             int64         // a request's body; beyond: 413
	MaxResponseBodyBytes            int64         // one member's answer in memory; beyond: the request fails
	MaxBufferedBytes                int64         // answers and bodies held at once; beyond: 429
	MaxRequestsInFlight             int           // served at once, long-running apart; beyond: 429
	MaxLongRunningRequestsInFlight  int           // watches, logs, exec, attach, port-forward; beyond: 429
	MaxLongRunningRequestsPerCaller int           // the same, of one caller (user name); beyond: 429
	MaxRequestsPerCaller            int           // served at once to one caller, long-running apart; beyond: 429
	MaxBufferedBytesPerCaller       int64         // answers and bodies held at once for one caller; beyond: 429
	RequestBodyTimeout              time.Duration // to receive the body of a request not long-running; beyond: 504
	MaxWatchEventBytes              int64         // one event of a member's watch; beyond: the watch ends
}

// defaultProxyLimits are proxy.DefaultMax*: 3 MiB bodies as kube-apiserver, and answers held
// within what the chart's 512 MiB worker can spare (proxy/limits.go says why).
func defaultProxyLimits() ProxyLimits {
	return ProxyLimits{
		MaxRequestBodyBytes:             3 << 20,
		MaxResponseBodyBytes:            32 << 20,
		MaxBufferedBytes:                96 << 20,
		MaxRequestsInFlight:             400,
		MaxLongRunningRequestsInFlight:  500,
		MaxLongRunningRequestsPerCaller: 100,
		MaxRequestsPerCaller:            100,
		MaxBufferedBytesPerCaller:       64 << 20,
		RequestBodyTimeout:              time.Minute,
		MaxWatchEventBytes:              3 << 20,
	}
}

// addFlags registers the limits' flags (worker, with --enable-proxy).
func (l *ProxyLimits) addFlags(fs *pflag.FlagSet) {
	fs.Var(bytesValue{&l.MaxRequestBodyBytes}, "proxy-max-request-body-bytes", "largest request body the proxy accepts (e.g. 3Mi); beyond it the request is answered 413 RequestEntityTooLarge, as by kube-apiserver's --max-request-bytes")
	fs.Var(bytesValue{&l.MaxResponseBodyBytes}, "proxy-max-response-body-bytes", "largest answer of one member cluster the proxy reads into memory to merge or translate it (a list, or the object a get or write looks up); a request needing a larger one fails with a Status naming the cluster, never with a truncated answer")
	fs.Var(bytesValue{&l.MaxBufferedBytes}, "proxy-max-buffered-bytes", "member answers and request bodies the proxy holds in memory at once across all requests (the worker's memory for them is up to about three times this); a request that would go beyond it is answered 429 with Retry-After")
	fs.IntVar(&l.MaxRequestsInFlight, "proxy-max-requests-inflight", l.MaxRequestsInFlight, "requests the proxy serves at once, long-running ones apart; beyond it a request is answered 429 with Retry-After, as by kube-apiserver's --max-requests-inflight")
	fs.IntVar(&l.MaxLongRunningRequestsInFlight, "proxy-max-long-running-requests-inflight", l.MaxLongRunningRequestsInFlight, "watches, logs, exec, attach and port-forward sessions the proxy serves at once; beyond it one is answered 429 with Retry-After")
	fs.IntVar(&l.MaxRequestsPerCaller, "proxy-max-requests-per-caller", l.MaxRequestsPerCaller, "requests the proxy serves at once to one caller (by user name), long-running ones apart; beyond it one is answered 429 with Retry-After, so that no caller takes all of --proxy-max-requests-inflight")
	fs.Var(bytesValue{&l.MaxBufferedBytesPerCaller}, "proxy-max-buffered-bytes-per-caller", "member answers and request bodies the proxy holds in memory at once for the requests of one caller (by user name); beyond it a request is answered 429 with Retry-After, so that no caller takes all of --proxy-max-buffered-bytes (at most that)")
	fs.DurationVar(&l.RequestBodyTimeout, "proxy-request-body-timeout", l.RequestBodyTimeout, "time a request other than a watch, log, exec, attach or port-forward has, from its start, to send its body; a body not received by then fails the request with 504 Timeout, so that a caller trickling bodies holds its slots no longer")
	fs.Var(bytesValue{&l.MaxWatchEventBytes}, "proxy-max-watch-event-bytes", "largest event of a member cluster's watch the proxy passes on (e.g. 3Mi); a larger one ends the watch with an ERROR event naming the cluster, instead of being read into memory whole")
	fs.IntVar(&l.MaxLongRunningRequestsPerCaller, "proxy-max-long-running-requests-per-caller", l.MaxLongRunningRequestsPerCaller, "watches, logs, exec, attach and port-forward sessions the proxy serves at once to one caller (by user name); beyond it one is answered 429 with Retry-After, so that no caller takes all of --proxy-max-long-running-requests-inflight")
}

func (l ProxyLimits) validate() []error {
	var errs []error
	for _, b := range []struct {
		flag  string
		value int64
	}{
		{"--proxy-max-request-body-bytes", l.MaxRequestBodyBytes},
		{"--proxy-max-response-body-bytes", l.MaxResponseBodyBytes},
		{"--proxy-max-buffered-bytes", l.MaxBufferedBytes},
		{"--proxy-max-requests-inflight", int64(l.MaxRequestsInFlight)},
		{"--proxy-max-long-running-requests-inflight", int64(l.MaxLongRunningRequestsInFlight)},
		{"--proxy-max-long-running-requests-per-caller", int64(l.MaxLongRunningRequestsPerCaller)},
		{"--proxy-max-requests-per-caller", int64(l.MaxRequestsPerCaller)},
		{"--proxy-max-buffered-bytes-per-caller", l.MaxBufferedBytesPerCaller},
		{"--proxy-max-watch-event-bytes", l.MaxWatchEventBytes},
	} {
		if b.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", b.flag, b.value))
		}
	}
	if l.RequestBodyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--proxy-request-body-timeout must be positive, got %v", l.RequestBodyTimeout))
	}
	if l.MaxResponseBodyBytes > l.MaxBufferedBytes {
		errs = append(errs, fmt.Errorf("--proxy-max-response-body-bytes (%d) must not exceed --proxy-max-buffered-bytes (%d): no answer beyond the latter is ever held",
			l.MaxResponseBodyBytes, l.MaxBufferedBytes))
	}
	return errs
}

// bytesValue is a flag of a number of bytes: a plain integer or a quantity such as 64Mi.
type bytesValue struct{ p *int64 }

func (b bytesValue) String() string {
	if b.p == nil {
		return "0"
	}
	return resource.NewQuantity(*b.p, resource.BinarySI).String()
}

// Type names the value in --help, as Kubernetes names its quantities.
func (b bytesValue) Type() string { return "quantity" }

func (b bytesValue) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a number of bytes (e.g. 3145728 or 3Mi)", s)
	}
	v, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%q is not a whole number of bytes", s)
	}
	*b.p = v
	return nil
}

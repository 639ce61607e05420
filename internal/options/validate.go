package options

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/redact"
	"github.com/karmadaflow/karmadaflow/internal/urlprefix"
)

// Validation of the options: every problem reported at once.

// Validate checks every option and reports all problems at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Component != Worker && o.Component != Starter {
		errs = append(errs, fmt.Errorf("unknown component %q", o.Component))
	}
	if err := validateHostPort(o.TemporalAddress); err != nil {
		errs = append(errs, fmt.Errorf("--temporal-address: %w", err))
	}
	if o.NamespaceRetention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("--temporal-namespace-retention must be at least 24h (Temporal's minimum), got %v", o.NamespaceRetention))
	}
	if o.TemporalNamespace == "" {
		errs = append(errs, errors.New("--temporal-namespace must not be empty"))
	}
	if o.TaskQueue == "" {
		errs = append(errs, errors.New("--task-queue must not be empty"))
	}
	// A workflow finds the base from its capability's queue (naming.BaseTaskQueue): a base
	// named like a capability's queue would be taken for one.
	if base := naming.BaseTaskQueue(o.TaskQueue); base != o.TaskQueue {
		errs = append(errs, fmt.Errorf("--task-queue %q must not end like the task queue of a capability (-%s)",
			o.TaskQueue, strings.Join(naming.Capabilities, ", -")))
	}
	if (o.TemporalTLSCertFile == "") != (o.TemporalTLSKeyFile == "") {
		errs = append(errs, errors.New("--temporal-tls-cert-file and --temporal-tls-key-file go together"))
	}
	if !(o.KubeAPIQPS > 0) { // NaN too
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be positive, got %d", o.KubeAPIBurst))
	}
	if err := validateHostPort(o.MetricsBindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--metrics-bind-address: %w", err))
	}
	if _, err := zapcore.ParseLevel(o.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if o.LogFormat != LogFormatJSON && o.LogFormat != LogFormatConsole {
		errs = append(errs, fmt.Errorf("--log-format must be %s or %s, got %q", LogFormatJSON, LogFormatConsole, o.LogFormat))
	}
	if o.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must be positive, got %v", o.ShutdownTimeout))
	}
	if o.MaxConcurrentActivities < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-activities must not be negative, got %d", o.MaxConcurrentActivities))
	}
	if o.EnableProxy {
		if err := validateHostPort(o.ProxyBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--proxy-bind-address: %w", err))
		}
		if (o.ProxyTLSCertFile == "") != (o.ProxyTLSKeyFile == "") {
			errs = append(errs, errors.New("--proxy-tls-cert-file and --proxy-tls-key-file go together"))
		}
		switch {
		case o.ProxyTLSCertFile == "" && !o.ProxySelfSignedCertificate:
			errs = append(errs, errors.New("--enable-proxy needs a serving certificate its callers can verify before they send their tokens: --proxy-tls-cert-file and --proxy-tls-key-file (or, for local development only, --proxy-self-signed-certificate)"))
		case o.ProxyTLSCertFile != "" && o.ProxySelfSignedCertificate:
			errs = append(errs, errors.New("--proxy-self-signed-certificate and --proxy-tls-cert-file exclude each other"))
		}
		if o.ProxyRequestTimeout <= 0 {
			errs = append(errs, fmt.Errorf("--proxy-request-timeout must be positive, got %v", o.ProxyRequestTimeout))
		}
		errs = append(errs, o.ProxyLimits.validate()...)
		if !slices.Contains([]string{"passthrough", "deny", "map"}, o.ProxyServiceAccountIdentity) {
			errs = append(errs, fmt.Errorf("--proxy-service-account-identity must be passthrough, deny or map, got %q", o.ProxyServiceAccountIdentity))
		}
	}
	if pa := o.ProxyAuth; o.EnableProxy {
		if !(pa.QPS > 0) || pa.Burst <= 0 || pa.MaxInFlight <= 0 {
			errs = append(errs, fmt.Errorf("--proxy-auth-qps (%v), --proxy-auth-burst (%d) and --proxy-auth-max-in-flight (%d) must be positive", pa.QPS, pa.Burst, pa.MaxInFlight))
		}
		if pa.CacheTTL <= 0 || pa.FailureCacheTTL <= 0 {
			errs = append(errs, fmt.Errorf("--proxy-auth-cache-ttl (%v) and --proxy-auth-failure-cache-ttl (%v) must be positive", pa.CacheTTL, pa.FailureCacheTTL))
		}
		if !(pa.SourceQPS > 0) || pa.SourceBurst <= 0 {
			errs = append(errs, fmt.Errorf("--proxy-auth-source-qps (%v) and --proxy-auth-source-burst (%d) must be positive", pa.SourceQPS, pa.SourceBurst))
		}
	}
	if o.ServeSearchAPI {
		if !o.EnableProxy {
			errs = append(errs, errors.New("--serve-search-api needs --enable-proxy"))
		}
		if len(o.SearchEtcdServers) == 0 {
			errs = append(errs, errors.New("--serve-search-api needs --search-etcd-servers"))
		}
		if (o.SearchEtcdCert == "") != (o.SearchEtcdKey == "") {
			errs = append(errs, errors.New("--search-etcd-certfile and --search-etcd-keyfile go together"))
		}
	}
	if o.Cluster != "" {
		if msgs := validation.IsDNS1123Label(o.Cluster); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--cluster %q: %s", o.Cluster, strings.Join(msgs, "; ")))
		}
		if o.EnableProxy {
			errs = append(errs, errors.New("--cluster runs the agent of a Pull cluster, which serves no proxy: drop --enable-proxy"))
		}
	}
	if o.MaxConcurrentWorkflowTasks < 2 {
		errs = append(errs, fmt.Errorf("--max-concurrent-workflow-tasks must be at least 2, got %d", o.MaxConcurrentWorkflowTasks))
	}
	if o.MaxConcurrentLocalActivities <= 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-local-activities must be positive, got %d", o.MaxConcurrentLocalActivities))
	}
	if !(o.ActivitiesPerSecond >= 0) {
		errs = append(errs, fmt.Errorf("--activities-per-second must not be negative, got %v", o.ActivitiesPerSecond))
	}
	if o.ClusterUnhealthyGrace < 0 {
		errs = append(errs, fmt.Errorf("--cluster-unhealthy-grace must not be negative, got %v", o.ClusterUnhealthyGrace))
	}
	if o.ClusterProbeInterval < time.Second {
		errs = append(errs, fmt.Errorf("--cluster-probe-interval must be at least 1s, got %v", o.ClusterProbeInterval))
	}
	if o.PullClusterLeaseGrace <= 0 {
		errs = append(errs, fmt.Errorf("--pull-cluster-lease-grace must be positive, got %v", o.PullClusterLeaseGrace))
	}
	if o.ClusterFailureThreshold <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-failure-threshold must be positive, got %v", o.ClusterFailureThreshold))
	}
	if o.TriggerWorkers <= 0 {
		errs = append(errs, fmt.Errorf("--trigger-workers must be positive, got %d", o.TriggerWorkers))
	}
	if o.ClusterChangeSignalsPerSecond <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-change-signals-per-second must be positive, got %v", o.ClusterChangeSignalsPerSecond))
	}
	if o.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--resync-period must not be negative, got %v", o.ResyncPeriod))
	}
	if o.WorkflowTaskTimeout < time.Second {
		errs = append(errs, fmt.Errorf("--workflow-task-timeout must be at least 1s, got %v", o.WorkflowTaskTimeout))
	}
	if o.StickyScheduleToStartTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--sticky-schedule-to-start-timeout must be at least 100ms, got %v", o.StickyScheduleToStartTimeout))
	}
	if o.WorkerVersioning && (o.WorkerDeployment == "" || strings.ContainsAny(o.WorkerDeployment, ".:")) {
		errs = append(errs, fmt.Errorf("--worker-deployment must be a non-empty name without '.' or ':', got %q", o.WorkerDeployment))
	}
	if o.ProvisioningSelector != "" {
		if _, err := labels.Parse(o.ProvisioningSelector); err != nil {
			errs = append(errs, fmt.Errorf("--provisioning-selector: %w", err))
		}
		if !o.EnableProvisioning {
			errs = append(errs, errors.New("--provisioning-selector needs --enable-provisioning"))
		}
	}
	if err := validateCRDTarballURL(o.CRDTarballURL); err != nil {
		errs = append(errs, fmt.Errorf("--crd-tarball-url: %w", err))
	}
	if _, err := urlprefix.ParseList(o.CRDTarballAllowedURLPrefixes); err != nil {
		errs = append(errs, fmt.Errorf("--crd-tarball-allowed-url-prefixes: %w", err))
	}
	if proxies, err := urlprefix.ParseList(o.CRDTarballAllowedProxyURLs); err != nil {
		errs = append(errs, fmt.Errorf("--crd-tarball-allowed-proxy-urls: %w", err))
	} else if i := slices.IndexFunc(proxies, urlprefix.Prefix.HasPath); i >= 0 {
		errs = append(errs, fmt.Errorf("--crd-tarball-allowed-proxy-urls: %q must be scheme://host[:port], without a path", proxies[i]))
	}
	for _, ns := range o.HostAccessNamespaces {
		if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("--host-access-namespaces: %q is not a namespace name: %s", ns, strings.Join(problems, "; ")))
		}
	}
	for _, namespace := range o.ProvisioningNamespaces {
		if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--provisioning-namespaces: %q is not a namespace name: %s", namespace, strings.Join(msgs, "; ")))
		}
	}
	if o.CRDTarballTokenSecret != "" {
		namespace, name, _ := strings.Cut(o.CRDTarballTokenSecret, "/")
		switch {
		case namespace == "" || name == "" || strings.Contains(name, "/"):
			errs = append(errs, fmt.Errorf("--crd-tarball-token-secret must be <namespace>/<name>, got %q", o.CRDTarballTokenSecret))
		case o.ProvisioningNamespaces != nil && !slices.Contains(o.ProvisioningNamespaces, namespace):
			// The worker may read Secrets there only.
			errs = append(errs, fmt.Errorf("--crd-tarball-token-secret %q must be in one of --provisioning-namespaces", o.CRDTarballTokenSecret))
		}
	}
	if o.EnsurePeriod <= 0 {
		errs = append(errs, fmt.Errorf("--ensure-period must be positive, got %v", o.EnsurePeriod))
	}
	if le := o.LeaderElection; le.Enabled {
		// client-go's own rules, reported with the flags' names.
		jittered := time.Duration(leaderelection.JitterFactor * float64(le.RetryPeriod))
		if le.RetryPeriod <= 0 || le.RenewDeadline <= jittered || le.LeaseDuration <= le.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election needs 0 < %v x --leader-elect-retry-period (%v) < --leader-elect-renew-deadline (%v) < --leader-elect-lease-duration (%v)",
				leaderelection.JitterFactor, le.RetryPeriod, le.RenewDeadline, le.LeaseDuration))
		}
		if le.ResourceName == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name must not be empty"))
		}
	}
	return errors.Join(errs...)
}

// validateCRDTarballURL checks that u, with a version in place of {{.Version}} (the
// placeholder of provisioning.CRDTarballVersion), is an http or https URL.
func validateCRDTarballURL(u string) error {
	if u == "" {
		return nil
	}
	parsed, err := url.Parse(strings.ReplaceAll(u, "{{.Version}}", "v0.0.0"))
	if err != nil {
		return errors.New("does not parse as a URL")
	}
	if (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return fmt.Errorf("%s is not an http or https URL", redact.URL(u))
	}
	return nil
}

func validateHostPort(address string) error {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if port == "" {
		return fmt.Errorf("%q has no port", address)
	}
	return nil
}

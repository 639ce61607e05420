package options

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestDefaults(t *testing.T) {
	worker, err := Parse(Worker, nil, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7233", worker.TemporalAddress)
	assert.Equal(t, "default", worker.TemporalNamespace)
	assert.Equal(t, "karmadaflow", worker.TaskQueue)
	assert.Equal(t, "127.0.0.1:9090", worker.MetricsBindAddress)

	starter, err := Parse(Starter, nil, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9091", starter.MetricsBindAddress)
}

func TestFlagBeatsEnvironmentBeatsDefault(t *testing.T) {
	o, err := Parse(Worker,
		[]string{"--task-queue=from-flag", "--karmada-kubeconfig", "/cp.kubeconfig"},
		env(map[string]string{
			"KARMADAFLOW_TASK_QUEUE":       "from-env",
			"KARMADAFLOW_TEMPORAL_ADDRESS": "temporal:7233",
			"KARMADAFLOW_SHUTDOWN_TIMEOUT": "5s",
		}))
	require.NoError(t, err)
	assert.Equal(t, "from-flag", o.TaskQueue)
	assert.Equal(t, "temporal:7233", o.TemporalAddress)
	assert.Equal(t, 5*time.Second, o.ShutdownTimeout)
	assert.Equal(t, "/cp.kubeconfig", o.KarmadaKubeconfig)
}

func TestComponentFlags(t *testing.T) {
	_, err := Parse(Starter, []string{"--max-concurrent-activities=3"}, env(nil))
	assert.Error(t, err, "worker flag accepted by the starter")
	_, err = Parse(Worker, []string{"--trigger-workers=3"}, env(nil))
	assert.Error(t, err, "starter flag accepted by the worker")
}

func TestValidation(t *testing.T) {
	for name, args := range map[string][]string{
		"address without port": {"--temporal-address=localhost"},
		"empty namespace":      {"--temporal-namespace="},
		"empty task queue":     {"--task-queue="},
		"capability's queue":   {"--task-queue=karmadaflow-mcs"},
		"bad log level":        {"--log-level=loud"},
		"bad log format":       {"--log-format=xml"},
		"bad metrics address":  {"--metrics-bind-address=9090"},
		"zero shutdown":        {"--shutdown-timeout=0s"},
		"stray argument":       {"extra"},
		"one workflow task":    {"--max-concurrent-workflow-tasks=1"},
		"proxy cert, no key":   {"--enable-proxy", "--proxy-tls-cert-file=a.crt"},
		"proxy bad address":    {"--enable-proxy", "--proxy-bind-address=10443"},
		"CRD tarball not http": {"--crd-tarball-url=ftp://mirror/{{.Version}}/crds.tar.gz"},
		"CRD tarball no host":  {"--crd-tarball-url=/{{.Version}}/crds.tar.gz"},
		"token Secret no ns":   {"--crd-tarball-token-secret=token"},
		"token Secret 3 parts": {"--crd-tarball-token-secret=a/b/c"},
		"allowed URL not http": {"--crd-tarball-allowed-url-prefixes=https://github.com/,github.com/"},
		"allowed URL query":    {"--crd-tarball-allowed-url-prefixes=https://mirror/crds/?sig=x"},
		"allowed URL dot-dot":  {"--crd-tarball-allowed-url-prefixes=https://mirror/crds/../"},
		"allowed proxy path":   {"--crd-tarball-allowed-proxy-urls=http://proxy:3128/x"},
		"allowed proxy socks":  {"--crd-tarball-allowed-proxy-urls=socks5://proxy:1080"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(Worker, args, env(nil))
			assert.Error(t, err)
		})
	}
}

func TestCRDTarballFlags(t *testing.T) {
	o, err := Parse(Worker, []string{"--crd-tarball-url=https://mirror.local/karmada/{{.Version}}/crds.tar.gz", "--crd-tarball-ca-file=/ca.crt"},
		env(map[string]string{"KARMADAFLOW_CRD_TARBALL_TOKEN_SECRET": "karmadaflow-system/mirror-token"}))
	require.NoError(t, err)
	assert.Equal(t, "https://mirror.local/karmada/{{.Version}}/crds.tar.gz", o.CRDTarballURL)
	assert.Equal(t, "/ca.crt", o.CRDTarballCAFile)
	assert.Equal(t, "karmadaflow-system/mirror-token", o.CRDTarballTokenSecret)
	_, err = Parse(Starter, []string{"--crd-tarball-url=https://mirror.local/crds.tar.gz"}, env(nil))
	assert.Error(t, err, "the worker downloads CRDs, not the starter")
}

// TestCRDTarballAllowlistFlags: unset, the lists are nil (the worker's defaults); set, they hold
// their items; set empty, they are empty (nothing allowed), which is not unset.
func TestCRDTarballAllowlistFlags(t *testing.T) {
	o, err := Parse(Worker, nil, env(nil))
	require.NoError(t, err)
	assert.Nil(t, o.CRDTarballAllowedURLPrefixes)
	assert.Nil(t, o.CRDTarballAllowedProxyURLs)
	o, err = Parse(Worker, []string{"--crd-tarball-allowed-url-prefixes= https://mirror.local/crds/ ,http://127.0.0.1:8080/,"},
		env(map[string]string{"KARMADAFLOW_CRD_TARBALL_ALLOWED_PROXY_URLS": "http://proxy.local:3128"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"https://mirror.local/crds/", "http://127.0.0.1:8080/"}, o.CRDTarballAllowedURLPrefixes)
	assert.Equal(t, []string{"http://proxy.local:3128"}, o.CRDTarballAllowedProxyURLs)
	o, err = Parse(Worker, []string{"--crd-tarball-allowed-url-prefixes="}, env(nil))
	require.NoError(t, err)
	assert.NotNil(t, o.CRDTarballAllowedURLPrefixes)
	assert.Empty(t, o.CRDTarballAllowedURLPrefixes)
	_, err = Parse(Starter, []string{"--crd-tarball-allowed-url-prefixes=https://mirror.local/"}, env(nil))
	assert.Error(t, err, "a worker flag")
}

// TestHostAccessNamespacesFlag: unset, no namespace may ask for host access; set (or from the
// environment), the namespaces listed; a name that is no namespace's is refused, and the
// starter has no such flag.
func TestHostAccessNamespacesFlag(t *testing.T) {
	o, err := Parse(Worker, nil, env(nil))
	require.NoError(t, err)
	assert.Empty(t, o.HostAccessNamespaces)
	o, err = Parse(Worker, []string{"--host-access-namespaces= platform , karmada-system,"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"platform", "karmada-system"}, o.HostAccessNamespaces)
	o, err = Parse(Worker, nil, env(map[string]string{"KARMADAFLOW_HOST_ACCESS_NAMESPACES": "platform"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"platform"}, o.HostAccessNamespaces)
	_, err = Parse(Worker, []string{"--host-access-namespaces=platform,*"}, env(nil))
	assert.ErrorContains(t, err, `--host-access-namespaces: "*" is not a namespace name`)
	_, err = Parse(Starter, []string{"--host-access-namespaces=platform"}, env(nil))
	assert.Error(t, err, "a worker flag")
}

// TestProvisioningNamespacesFlag: unset, every namespace (nil); set, its namespaces; set empty,
// none. A name that is no namespace's, or a CRD mirror token outside them (the worker may not
// read it), is refused.
func TestProvisioningNamespacesFlag(t *testing.T) {
	o, err := Parse(Worker, nil, env(nil))
	require.NoError(t, err)
	assert.Nil(t, o.ProvisioningNamespaces)
	o, err = Parse(Worker, []string{"--provisioning-namespaces=tenant1, tenant2", "--crd-tarball-token-secret=tenant2/mirror"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant1", "tenant2"}, o.ProvisioningNamespaces)
	o, err = Parse(Worker, []string{"--provisioning-namespaces="}, env(nil))
	require.NoError(t, err)
	assert.NotNil(t, o.ProvisioningNamespaces)
	assert.Empty(t, o.ProvisioningNamespaces)

	_, err = Parse(Worker, []string{"--provisioning-namespaces=tenant1,Tenant_2"}, env(nil))
	assert.ErrorContains(t, err, `--provisioning-namespaces: "Tenant_2" is not a namespace name`)
	_, err = Parse(Worker, []string{"--provisioning-namespaces=tenant1", "--crd-tarball-token-secret=karmadaflow-system/mirror"}, env(nil))
	assert.ErrorContains(t, err, "must be in one of --provisioning-namespaces")
	_, err = Parse(Starter, []string{"--provisioning-namespaces=tenant1"}, env(nil))
	assert.Error(t, err, "a worker flag")
}

func TestStarterValidation(t *testing.T) {
	for name, args := range map[string][]string{
		"zero ensure period":             {"--ensure-period=0s"},
		"zero failure threshold":         {"--cluster-failure-threshold=0s"},
		"renew deadline beyond lease":    {"--leader-elect", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"},
		"retry period beyond renewal":    {"--leader-elect", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"},
		"leader election without a name": {"--leader-elect", "--leader-elect-resource-name="},
		"bad provisioning selector":      {"--provisioning-selector=a in (b"},
		"selector without provisioning":  {"--enable-provisioning=false", "--provisioning-selector=a=b"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(Starter, args, env(nil))
			assert.Error(t, err)
		})
	}
	o, err := Parse(Starter, []string{"--leader-elect-lease-duration=4s"}, env(map[string]string{
		"KARMADAFLOW_LEADER_ELECT": "true", "KARMADAFLOW_ENSURE_PERIOD": "5s",
		"KARMADAFLOW_LEADER_ELECT_RENEW_DEADLINE": "3s", "KARMADAFLOW_LEADER_ELECT_RETRY_PERIOD": "500ms",
	}))
	require.NoError(t, err)
	assert.Equal(t, LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second,
		RetryPeriod: 500 * time.Millisecond, ResourceName: "karmadaflow-starter"}, o.LeaderElection)
	assert.Equal(t, 5*time.Second, o.EnsurePeriod)
}

func TestBadEnvironmentValue(t *testing.T) {
	_, err := Parse(Worker, nil, env(map[string]string{"KARMADAFLOW_KUBE_API_BURST": "many"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KARMADAFLOW_KUBE_API_BURST")
}

func TestUsageNamesEnvironmentVariables(t *testing.T) {
	assert.Contains(t, Usage(Worker), "KARMADAFLOW_TEMPORAL_ADDRESS")
	assert.Contains(t, Usage(Starter), "--trigger-workers")
	for _, c := range []Component{Worker, Starter} {
		usage := Usage(c)
		fs := pflag.NewFlagSet(string(c), pflag.ContinueOnError)
		Default(c).AddFlags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			assert.Contains(t, usage, "--"+f.Name+" ", c)
			assert.Contains(t, usage, "(env "+EnvName(f.Name)+")", c)
		})
	}
}

// A subcommand's --help names the subcommand, not the program alone.
func TestUsageNamesTheCommand(t *testing.T) {
	assert.True(t, strings.HasPrefix(Usage(Worker), "Usage of worker.\n"))
	assert.True(t, strings.HasPrefix(usage(Worker, "worker versions", 0), "Usage of worker versions.\n"))
}

// TestUsageSections: --help groups the flags in sections as Kubernetes components do, each
// component showing its own sections only, and every flag is in one section.
func TestUsageSections(t *testing.T) {
	shared := []string{"Temporal flags:", "Kubernetes flags:", "Observability flags:", "Capabilities flags:", "Provisioning flags:", "Global flags:"}
	workerOnly := []string{"Worker flags:", "Proxy flags:", "Search API flags:"}
	starterOnly := []string{"Starter flags:", "Leader election flags:"}
	for c, sections := range map[Component][2][]string{
		Worker:  {append(shared, workerOnly...), starterOnly},
		Starter: {append(shared, starterOnly...), workerOnly},
	} {
		usage := Usage(c)
		for _, heading := range sections[0] {
			assert.Contains(t, usage, "\n"+heading+"\n", c)
		}
		for _, heading := range sections[1] {
			assert.NotContains(t, usage, heading, c)
		}
		assert.Contains(t, usage, "-h, --help", c)
		assert.Contains(t, usage, "--version", c)

		// AddFlagSet skips a name it already has, so a flag in two sections would vanish from
		// one of them: the sections hold as many flags as AddFlags registers.
		inSections, added := 0, 0
		for _, fs := range Default(c).flagSections().FlagSets {
			fs.VisitAll(func(*pflag.Flag) { inSections++ })
		}
		all := pflag.NewFlagSet(string(c), pflag.ContinueOnError)
		Default(c).AddFlags(all)
		all.VisitAll(func(*pflag.Flag) { added++ })
		assert.Equal(t, added, inSections, c)
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		_, err := Parse(Worker, []string{"--temporal-address=temporal:7233", arg}, env(nil))
		assert.ErrorIs(t, err, pflag.ErrHelp, arg)
	}
}

// TestSingleDashLongFlagIsRefused: pflag, unlike the standard library's flag package, takes
// long flags with two dashes only; one dash is refused naming the flag as it should be given.
func TestSingleDashLongFlagIsRefused(t *testing.T) {
	for arg, want := range map[string]string{
		"-temporal-address=temporal:7233": "--temporal-address",
		"-enable-proxy":                   "--enable-proxy",
		"-version":                        "--version",
	} {
		_, err := Parse(Worker, []string{arg}, env(nil))
		if assert.Error(t, err, arg) {
			assert.Contains(t, err.Error(), "two dashes", arg)
			assert.Contains(t, err.Error(), want, arg)
		}
	}
	// A value may start with a dash.
	o, err := Parse(Worker, []string{"--workflow-id-prefix", "-eu"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "-eu", o.WorkflowIDPrefix)
}

// TestBoolFlags: a bool flag alone is true, and takes =true or =false, over its environment
// variable.
func TestBoolFlags(t *testing.T) {
	for args, want := range map[string]bool{
		"--leader-elect":       true,
		"--leader-elect=true":  true,
		"--leader-elect=false": false,
	} {
		o, err := Parse(Starter, []string{args}, env(map[string]string{"KARMADAFLOW_LEADER_ELECT": strconv.FormatBool(!want)}))
		require.NoError(t, err, args)
		assert.Equal(t, want, o.LeaderElection.Enabled, args)
	}
}

func TestVersion(t *testing.T) {
	_, err := Parse(Worker, []string{"--temporal-address=temporal:7233", "--version"}, env(nil))
	assert.ErrorIs(t, err, ErrVersion)
	assert.Contains(t, Usage(Starter), "--version")

	// --version is a command-line request only: no environment variable asks for it.
	_, err = Parse(Starter, nil, env(map[string]string{"KARMADAFLOW_VERSION": "true"}))
	assert.NoError(t, err)
}

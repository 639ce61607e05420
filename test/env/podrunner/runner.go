// Package podrunner is the kubelet (and kube-proxy) of one node of the local environment for
// the pods karmadaflow provisions: where KWOK only marks pods Running, the runner really runs
// every pod scheduled to its node that carries app.kubernetes.io/managed-by=karmadaflow. The
// container image decides the binary (<BinDir>/<image basename>), the container's command and
// args run as written with $(VAR) references expanded, Secret, ConfigMap and other volumes
// are files under Dir, every pod and Service gets a loopback address of its own, Service
// names resolve through a hosts file the runner maintains, and the runner writes the pods'
// status as the kubelet would, readiness probes included.
//
// Everything stays on loopback: processes see their pod's loopback address as $(POD_IP), the
// runner forwards Service ports from loopback addresses, and each process runs in a private
// mount namespace where /etc/hosts is the runner's and /etc/resolv.conf names 127.0.0.1, so
// no name is ever asked of the machine's resolver. Running processes in mount namespaces
// needs root (and unshare, mount and hostname from util-linux).
package podrunner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The label of the pods the runner plays, the one karmadaflow's provisioning puts on
// everything it creates (provisioning.LabelManagedBy and provisioning.ManagedBy; that package
// is not imported, to keep the environment's dependencies small).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = naming.FieldManager
)

const (
	// stopGrace bounds the grace period of the processes Stop ends.
	stopGrace = 5 * time.Second
	// podResync syncs every played pod this often even without a change: service-account
	// tokens are refreshed then.
	podResync = 30 * time.Second
	// DefaultClusterDomain is the cluster domain of Service and pod names.
	DefaultClusterDomain = "cluster.local"
)

// Options configure Start.
type Options struct {
	// Client is an admin client of the cluster whose node the runner plays.
	Client kubernetes.Interface
	// NodeName is the node whose pods are played; NodeIP its loopback InternalIP, where
	// NodePort Services are served and hostIP of every pod.
	NodeName string
	NodeIP   string
	// BinDir holds the binaries images stand for: <BinDir>/etcd, <BinDir>/kube-apiserver...
	BinDir string
	// Dir holds the pods' volumes (<Dir>/<namespace>/<pod>), their logs
	// (<Dir>/logs/<namespace>_<pod>_<container>.log) and hostPath volumes (<Dir>/hostpath).
	Dir string
	// ClusterDomain of Service and pod names; empty means DefaultClusterDomain.
	ClusterDomain string
	// Logf receives what the runner does; nil discards it.
	Logf func(format string, args ...any)
}

// Runner plays the pods of one node until Stop.
type Runner struct {
	opts      Options
	tools     wrapperTools
	addresses *addressPool
	queue     workqueue.TypedRateLimitingInterface[string]
	proxies   *proxies
	hosts     *hostsFiles

	pods       corelisters.PodLister
	services   corelisters.ServiceLister
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister

	ctx    context.Context // ends with Stop
	cancel context.CancelFunc

	mu       sync.Mutex
	played   map[string]*pod // by namespace/name
	stopping bool

	workers  sync.WaitGroup // queue workers and the hosts writer
	ending   sync.WaitGroup // terminations of deleted pods
	stopOnce sync.Once
}

// Start plays the node's pods until Stop; ctx bounds the start only (reading the node and
// filling the informers' caches).
func Start(ctx context.Context, opts Options) (*Runner, error) {
	if opts.Client == nil || opts.NodeName == "" || opts.BinDir == "" || opts.Dir == "" {
		return nil, errors.New("podrunner: Client, NodeName, BinDir and Dir are required")
	}
	if ip := net.ParseIP(opts.NodeIP); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("podrunner: node IP %q is not a loopback address", opts.NodeIP)
	}
	if opts.ClusterDomain == "" {
		opts.ClusterDomain = DefaultClusterDomain
	}
	// Rewritten paths must not depend on the processes' working directories.
	var err error
	for _, dir := range []*string{&opts.BinDir, &opts.Dir} {
		if *dir, err = filepath.Abs(*dir); err != nil {
			return nil, err
		}
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	tools, err := findWrapperTools()
	if err != nil {
		return nil, err
	}
	node, err := opts.Client.CoreV1().Nodes().Get(ctx, opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("podrunner: node %s: %w", opts.NodeName, err)
	}
	addresses, err := newAddressPool(node.Spec.PodCIDR, opts.NodeIP)
	if err != nil {
		return nil, fmt.Errorf("podrunner: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	r := &Runner{
		opts:      opts,
		tools:     tools,
		addresses: addresses,
		played:    map[string]*pod{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podrunner"}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.proxies = newProxies(r)
	if r.hosts, err = newHostsFiles(r); err != nil {
		return nil, err
	}
	if err := r.startInformers(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	for range 2 {
		r.workers.Go(func() {
			for r.processNext() {
			}
		})
	}
	r.workers.Go(r.hosts.run)
	opts.Logf("podrunner: playing the %s=%s pods of node %s (%s)", LabelManagedBy, ManagedBy, opts.NodeName, opts.NodeIP)
	return r, nil
}

func (r *Runner) logf(format string, args ...any) { r.opts.Logf("podrunner: "+format, args...) }

// startInformers watches the node's played pods, and every Service, Secret and ConfigMap.
func (r *Runner) startInformers(ctx context.Context) error {
	podFactory := informers.NewSharedInformerFactoryWithOptions(r.opts.Client, podResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", r.opts.NodeName).String()
			o.LabelSelector = LabelManagedBy + "=" + ManagedBy
		}))
	factory := informers.NewSharedInformerFactory(r.opts.Client, 0)
	pods := podFactory.Core().V1().Pods()
	services := factory.Core().V1().Services()
	secrets := factory.Core().V1().Secrets()
	configMaps := factory.Core().V1().ConfigMaps()
	r.pods, r.services = pods.Lister(), services.Lister()
	r.secrets, r.configMaps = secrets.Lister(), configMaps.Lister()

	onPod := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	onService := func(any) {
		r.proxies.sync()
		r.hosts.changed()
	}
	// A changed Secret or ConfigMap is written into the volumes of the namespace's pods.
	onData := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			r.enqueueNamespace(m.GetNamespace())
		}
	}
	for informer, handle := range map[cache.SharedIndexInformer]func(any){
		pods.Informer(): onPod, services.Informer(): onService, secrets.Informer(): onData, configMaps.Informer(): onData,
	} {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, obj any) { handle(obj) },
			DeleteFunc: handle,
		}); err != nil {
			return err
		}
	}
	podFactory.Start(r.ctx.Done())
	factory.Start(r.ctx.Done())
	for _, synced := range []map[string]bool{
		typeNames(podFactory.WaitForCacheSync(ctx.Done())), typeNames(factory.WaitForCacheSync(ctx.Done())),
	} {
		for name, ok := range synced {
			if !ok {
				return fmt.Errorf("podrunner: %s informer did not sync: %w", name, ctx.Err())
			}
		}
	}
	return nil
}

func typeNames[T comparable](synced map[T]bool) map[string]bool {
	out := map[string]bool{}
	for t, ok := range synced {
		out[fmt.Sprint(t)] = ok
	}
	return out
}

// Stop ends every played process (SIGTERM, SIGKILL after at most 5 s) and the forwarding,
// and waits for them. The pods stay as they are in the API. It is safe to call more than once.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.stopping = true
		r.mu.Unlock()
		r.cancel()
		r.queue.ShutDown()
		r.hosts.close()
		r.workers.Wait()
		var wg sync.WaitGroup
		for _, p := range r.playedPods() {
			wg.Go(func() { p.stop(min(p.gracePeriod(), stopGrace)) })
		}
		wg.Wait()
		r.ending.Wait()
		r.proxies.close()
	})
}

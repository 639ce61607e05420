package karmadae2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Two tags of the same binaries: the pod runner picks the binary by the image's basename, so
// each pair below runs the same program, and only the rollout machinery tells them apart.
const (
	karmadaFrom, karmadaTo = "v1.19.0", "v1.19.1"
	kubeFrom, kubeTo       = "v1.31.3", "v1.31.4"
	etcdFrom, etcdTo       = "3.5.16-0", "3.5.17-0"
	// A repository whose basename has no binary: the pod runner leaves its container waiting
	// with ErrImagePull, as a kubelet does for an image that does not exist.
	missingScheduler = "docker.io/karmada/karmada-scheduler-missing"
	// Written into the control plane before the upgrade, read after it.
	canaryName = "upgrade-canary"
)

// TestUpgradeRollsInOrder shows issue 27 point 2: a change of versions rolls etcd, then the
// API server, then the aggregated API server, then the CRDs, then each component in turn, each
// to completion before the next starts, with the Ready condition naming what rolls; a rollout
// that cannot complete stops there and says why, and a fixed spec resumes it.
func TestUpgradeRollsInOrder(t *testing.T) {
	in := instance{namespace: nsUpgrade, name: "upgrade", components: upgradeComponents()}
	// Should an assertion stop the test half way, the instance must not keep its processes
	// running for the tests after this one.
	t.Cleanup(func() {
		if t.Failed() {
			_ = testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace).Delete(context.Background(), in.name, metav1.DeleteOptions{})
		}
	})
	// Recording from before the create, so that the install's order is checked too: etcd and
	// the API servers one by one, then the components, which the first install starts together.
	rec := startRollRecorder(t, in)
	step := timer(t)

	// 1. Install the old versions.
	createKarmada(t, in)
	waitKarmadaReady(t, in, 10*time.Minute)
	k := readyKarmada(t, in, 1)
	step("installed " + karmadaFrom)
	checkRolledInOrder(t, rec, k, 0, false)
	checkProgress(t, rec, k.Generation, "installing", fullRoll(k))
	cp := kubernetes.NewForConfigOrDie(controlPlane(t, in))
	_, err := cp.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: canaryName}, Data: map[string]string{"written-with": karmadaFrom}}, metav1.CreateOptions{})
	require.NoError(t, err, "write the canary into the control plane")

	// 2. Upgrade every image at once: the product, not the order of the edits, must order
	// the rollout.
	podMark := rec.podSeq()
	// The API server has one replica here: the gap in service, if any, is reported. (etcd
	// restarts too, so requests that reach it meanwhile fail.)
	probe := probeAdminKubeconfig(in)
	generation := updateKarmada(t, in, func(k *operatorv1alpha1.Karmada) {
		setVersions(k.Spec.Components, karmadaTo, kubeTo, etcdTo)
	})
	waitKarmadaReady(t, in, 10*time.Minute)
	failures, probes := probe.stop()
	t.Logf("admin kubeconfig during the upgrade, one API server replica: %d probes, %d failed %v", probes, len(failures), failures)
	k = readyKarmada(t, in, generation)
	step("upgraded to " + karmadaTo)

	// 3. Every workload runs the new images, rolled out in order, the status told the way.
	waitNoTerminatingPods(t, in)
	checkEveryComponentReady(t, in)
	checkImages(t, in, k)
	checkRolledInOrder(t, rec, k, podMark, true)
	checkProgress(t, rec, generation, "rolling out", fullRoll(k))
	assert.Empty(t, rec.conditionsOf(generation, operatorv1alpha1.ReasonFailed), "no step of a healthy upgrade failed")
	assert.Equal(t, karmadaTo, k.Status.KarmadaVersion)
	assert.Equal(t, kubeTo, k.Status.KubernetesVersion)
	// etcd restarted on its (hostPath) data: the control plane kept what it stored.
	cp = kubernetes.NewForConfigOrDie(controlPlane(t, in))
	canary, err := cp.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(context.Background(), canaryName, metav1.GetOptions{})
	if assert.NoError(t, err, "the canary survived the upgrade") {
		assert.Equal(t, karmadaFrom, canary.Data["written-with"])
	}
	checkCRDs(t, controlPlane(t, in))

	// 4. A rollout that cannot complete stops and reports; the webhook, after the scheduler,
	// has a change too, which must wait for the scheduler.
	webhookBefore := deploymentOf(t, in, prov.Webhook)
	require.NotContains(t, webhookBefore.Spec.Template.Spec.Containers[0].Command, "--v=4")
	podMark = rec.podSeq()
	failing := updateKarmada(t, in, func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaScheduler.ImageRepository = missingScheduler
		k.Spec.Components.KarmadaWebhook.ExtraArgs = map[string]string{"v": "4"}
	})
	// The Deployment's progress deadline (120 s) plus the wait's polling.
	failedFor := func(c readyCondition) bool {
		return c.Generation == failing && c.Reason == operatorv1alpha1.ReasonFailed
	}
	failedAt := rec.waitCondition(t, 0, 4*time.Minute, "Ready=False/Failed for generation "+strconv.FormatInt(failing, 10), failedFor)
	step("scheduler rollout reported failed")
	failed := rec.conditions()[failedAt]
	assert.Equal(t, metav1.ConditionFalse, failed.Status)
	assert.True(t, strings.HasPrefix(failed.Message, "WaitComponentReady/karmada-scheduler: the rollout of karmada-scheduler failed"), failed.Message)
	assert.Contains(t, failed.Message, "ErrImagePull", "the message says why the pod cannot start")
	// The workflow retries with backoff (5 s after a first failure): the retried pass must stop
	// at the same component, not go on to the next.
	rec.waitCondition(t, failedAt+1, time.Minute, "a retried pass failing again", failedFor)
	step("retried pass failed again")
	webhookStopped := deploymentOf(t, in, prov.Webhook)
	assert.Equal(t, webhookBefore.Generation, webhookStopped.Generation, "the webhook's Deployment was not changed after the failed scheduler")
	assert.NotContains(t, webhookStopped.Spec.Template.Spec.Containers[0].Command, "--v=4")
	assert.Equal(t, []string{componentStep(k, prov.Scheduler)}, progressSteps(t, rec, failing, "rolling out"),
		"the failing generation rolls the scheduler only")
	assert.Empty(t, rec.podsCreatedSince(podMark, prov.Webhook.Name), "no webhook pod was created")

	// The fix: the scheduler's repository back to the default. The next pass rolls it, then
	// the webhook, and nothing else.
	fixed := updateKarmada(t, in, func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaScheduler.ImageRepository = ""
	})
	waitKarmadaReady(t, in, 5*time.Minute)
	k = readyKarmada(t, in, fixed)
	step("fixed and rolled")
	waitNoTerminatingPods(t, in)
	checkEveryComponentReady(t, in)
	checkImages(t, in, k)
	assert.Equal(t, []string{componentStep(k, prov.Scheduler), componentStep(k, prov.Webhook)}, progressSteps(t, rec, fixed, "rolling out"),
		"the fix rolls the scheduler, then the webhook")
	webhook := deploymentOf(t, in, prov.Webhook)
	assert.Greater(t, webhook.Generation, webhookBefore.Generation)
	assert.Contains(t, webhook.Spec.Template.Spec.Containers[0].Command, "--v=4")
	webhookPods := rec.podsCreatedSince(podMark, prov.Webhook.Name)
	if assert.NotEmpty(t, webhookPods, "a new webhook pod") {
		assert.Contains(t, webhookPods[0].command, "--v=4")
		assert.NotZero(t, webhookPods[0].ready, "the new webhook pod became Ready")
	}
	scheduler := deploymentOf(t, in, prov.Scheduler)
	assert.Equal(t, prov.Image(k, prov.Scheduler), scheduler.Spec.Template.Spec.Containers[0].Image)
	// Only the scheduler and the webhook changed: no other workload got a new pod.
	for _, c := range []prov.Component{prov.Etcd, prov.APIServer, prov.AggregatedAPIServer, prov.KubeControllerManager, prov.ControllerManager} {
		assert.Empty(t, rec.podsCreatedSince(podMark, c.Name), "%s rolled although its spec did not change", c.Name)
	}
	assert.Empty(t, rec.errors(), "the watches of the recorder")

	// 5. Leave the environment clean.
	rec.stop()
	checkDeletion(t, in)
	step("deleted")
}

// upgradeComponents: a NodePort instance like TestWorkingKarmada's default one, every image
// tag explicit, and etcd's data on a hostPath volume. With the default emptyDir, rolling etcd
// starts it on an empty directory and the control plane loses everything it stored.
func upgradeComponents() *operatorv1alpha1.KarmadaComponents {
	c := &operatorv1alpha1.KarmadaComponents{
		Etcd: &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{VolumeData: &operatorv1alpha1.VolumeData{
			HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/karmadaflow-e2e/" + nsUpgrade + "/etcd", Type: ptr.To(corev1.HostPathDirectoryOrCreate)},
		}}},
		KarmadaAPIServer:           &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort},
		KarmadaAggregatedAPIServer: &operatorv1alpha1.KarmadaAggregatedAPIServer{},
		KubeControllerManager:      &operatorv1alpha1.KubeControllerManager{},
		KarmadaControllerManager:   &operatorv1alpha1.KarmadaControllerManager{},
		KarmadaScheduler:           &operatorv1alpha1.KarmadaScheduler{},
		KarmadaWebhook:             &operatorv1alpha1.KarmadaWebhook{},
	}
	setVersions(c, karmadaFrom, kubeFrom, etcdFrom)
	return c
}

// setVersions sets the tags of every image, keeping the default repositories.
func setVersions(c *operatorv1alpha1.KarmadaComponents, karmada, kubernetes, etcd string) {
	c.Etcd.Local.ImageTag = etcd
	c.KarmadaAPIServer.ImageTag = kubernetes
	c.KubeControllerManager.ImageTag = kubernetes
	c.KarmadaAggregatedAPIServer.ImageTag = karmada
	c.KarmadaControllerManager.ImageTag = karmada
	c.KarmadaScheduler.ImageTag = karmada
	c.KarmadaWebhook.ImageTag = karmada
}

// updateKarmada changes the spec (again on a conflict with the workflow's status writes)
// and returns the new generation.
func updateKarmada(t *testing.T, in instance, change func(*operatorv1alpha1.Karmada)) int64 {
	var before, after int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		k, found, err := getKarmada(in)
		if err != nil || !found {
			return fmt.Errorf("reading Karmada %s/%s (found %v): %w", in.namespace, in.name, found, err)
		}
		before = k.Generation
		change(k)
		u, err := kube.ToUnstructured(k)
		if err != nil {
			return err
		}
		updated, err := testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace).Update(context.Background(), u, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		after = updated.GetGeneration()
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, after, before, "the change is a spec change")
	return after
}

// readyKarmada is the Karmada, which must be Ready for generation: waitKarmadaReady only
// reports an error, and nothing after it makes sense if it is not.
func readyKarmada(t *testing.T, in instance, generation int64) *operatorv1alpha1.Karmada {
	k, found, err := getKarmada(in)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, generation, k.Generation)
	require.Equal(t, generation, k.Status.ObservedGeneration)
	require.True(t, meta.IsStatusConditionTrue(k.Status.Conditions, operatorv1alpha1.ConditionReady), "Ready")
	return k
}

func deploymentOf(t *testing.T, in instance, c prov.Component) *appsv1.Deployment {
	d, err := testEnv.Host.Client().AppsV1().Deployments(in.namespace).Get(context.Background(), prov.NamesFor(in.name).Of(c.Suffix), metav1.GetOptions{})
	require.NoError(t, err)
	return d
}

// workloads are k's workloads in the order they roll.
func workloads(k *operatorv1alpha1.Karmada) []prov.Component {
	return append([]prov.Component{prov.Etcd, prov.APIServer, prov.AggregatedAPIServer}, prov.InstalledComponents(k)...)
}

// fullRoll is what the Ready condition names, in order, while every workload rolls.
func fullRoll(k *operatorv1alpha1.Karmada) []string {
	steps := []string{"rolling etcd", "rolling karmada-apiserver", "rolling karmada-aggregated-apiserver",
		"applying the CRDs and objects of the control plane"}
	for _, c := range prov.InstalledComponents(k) {
		steps = append(steps, componentStep(k, c))
	}
	return steps
}

// componentStep is the Ready condition's account of rolling component c of k.
func componentStep(k *operatorv1alpha1.Karmada, c prov.Component) string {
	installed := prov.InstalledComponents(k)
	i := slices.IndexFunc(installed, func(o prov.Component) bool { return o.Name == c.Name })
	return fmt.Sprintf("rolling %s (component %d of %d)", c.Name, i+1, len(installed))
}

// waitNoTerminatingPods: a rollout is complete once the old pods are terminating, but they
// are still listed until the pod runner has stopped their processes.
func waitNoTerminatingPods(t *testing.T, in instance) {
	var terminating []string
	require.NoError(t, poll(2*time.Minute, func() (bool, error) {
		pods, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: prov.InstanceSelector(in.name)})
		if err != nil {
			return false, err
		}
		terminating = nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				terminating = append(terminating, p.Name)
			}
		}
		return len(terminating) == 0, nil
	}), "old pods still terminating: %v", terminating)
}

// checkImages: every pod of the instance runs the image k's spec gives its workload.
func checkImages(t *testing.T, in instance, k *operatorv1alpha1.Karmada) {
	byName := map[string]prov.Component{}
	for _, c := range workloads(k) {
		byName[c.Name] = c
	}
	pods, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: prov.InstanceSelector(in.name)})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range pods.Items {
		name := p.Labels[prov.LabelName]
		c, ok := byName[name]
		if !assert.True(t, ok, "pod %s of no workload (%s)", p.Name, name) {
			continue
		}
		seen[name] = true
		assert.Equal(t, prov.Image(k, c), p.Spec.Containers[0].Image, "image of pod %s", p.Name)
		if assert.NotEmpty(t, p.Status.ContainerStatuses, p.Name) {
			assert.Equal(t, prov.Image(k, c), p.Status.ContainerStatuses[0].Image, "image pod %s runs", p.Name)
		}
	}
	for name := range byName {
		assert.True(t, seen[name], "no pod of %s", name)
	}
}

// checkRolledInOrder: for each workload, in order, a pod with the image k gives it (created
// after event since) became Ready before the first such pod of the next workload was created.
// Without oneByOne (the first install: nothing runs yet that an order would protect) the
// components after the API servers start together, each once the aggregated API server is
// Ready. The order is that of the events of one pod watch, which the API server sends in the
// order it committed them: exact, where the pods' timestamps only have seconds.
func checkRolledInOrder(t *testing.T, rec *rollRecorder, k *operatorv1alpha1.Karmada, since int, oneByOne bool) {
	var gate *podRecord // the new pod that must be Ready before the next workload's is created
	for i, c := range workloads(k) {
		image := prov.Image(k, c)
		var created, ready *podRecord
		for _, p := range rec.podsCreatedSince(since, c.Name) {
			if p.image != image {
				continue
			}
			if created == nil {
				created = &p
			}
			if p.ready != 0 && (ready == nil || p.ready < ready.ready) {
				ready = &p
			}
		}
		if !assert.NotNil(t, created, "no pod of %s with image %s", c.Name, image) {
			gate = nil
			continue
		}
		if gate != nil {
			assert.Less(t, gate.ready, created.created, "the new pod of %s was created (event %d, %s) before the new pod of %s was Ready (event %d, %s)",
				c.Name, created.created, created.createdAt.Format(time.TimeOnly), gate.component, gate.ready, gate.readyAt.Format(time.TimeOnly))
		}
		if !assert.NotNil(t, ready, "no new pod of %s became Ready", c.Name) {
			gate = nil
			continue
		}
		if oneByOne || i < 3 { // etcd and the two API servers always roll one by one
			gate = ready
		}
		t.Logf("%-28s %-58s created %s (event %3d), Ready %s (event %3d)", c.Name, image,
			created.createdAt.Format(time.TimeOnly), created.created, ready.readyAt.Format(time.TimeOnly), ready.ready)
	}
}

// checkProgress: the Ready condition named each of want, in this order, while generation
// rolled (it may name more: certificates, repeats after a retry).
func checkProgress(t *testing.T, rec *rollRecorder, generation int64, verb string, want []string) {
	got := progressSteps(t, rec, generation, verb)
	t.Logf("Ready=False/Progressing while generation %d rolled: %q", generation, got)
	i := 0
	for _, step := range got {
		if i < len(want) && strings.HasPrefix(step, want[i]) {
			i++
		}
	}
	assert.Equal(t, len(want), i, "the Ready condition of generation %d named %q in order; it named:\n%s\nmissing from %q on",
		generation, want, strings.Join(got, "\n"), want[min(i, len(want)-1)])
}

// progressSteps are what the Progressing Ready conditions of generation said was rolling, in
// order, without consecutive repeats; each must read "<verb> generation <n>: <what>" (or
// just "<verb> generation <n>" before the first step that says what it does) and say False.
func progressSteps(t *testing.T, rec *rollRecorder, generation int64, verb string) []string {
	phase := fmt.Sprintf("%s generation %d", verb, generation)
	var steps []string
	for _, c := range rec.conditionsOf(generation, operatorv1alpha1.ReasonProgressing) {
		assert.Equal(t, metav1.ConditionFalse, c.Status, "Ready while progressing: %s", c.Message)
		if c.Message == phase {
			continue
		}
		what, ok := strings.CutPrefix(c.Message, phase+": ")
		assert.True(t, ok, "message %q does not start with %q", c.Message, phase+": ")
		if len(steps) == 0 || steps[len(steps)-1] != what {
			steps = append(steps, what)
		}
	}
	return steps
}

// rollRecorder watches one instance's Karmada and pods and keeps, in the order the API server
// committed them, every Ready condition written and, per pod, the event of the pod watch at
// which it appeared and the one at which it first was Ready. A watch misses no change, where
// polling would miss the steps that take less than its interval.
type rollRecorder struct {
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu    sync.Mutex
	conds []readyCondition
	pods  []*podRecord
	byUID map[types.UID]*podRecord
	seq   int // events of the pod watch
	errs  []string
}

type readyCondition struct {
	Generation      int64 // the condition's observedGeneration
	Status          metav1.ConditionStatus
	Reason, Message string
	seen            time.Time
}

type podRecord struct {
	name, component, image string
	command                []string
	created, ready         int // events of the pod watch; ready 0 until Ready
	createdAt, readyAt     time.Time
}

func startRollRecorder(t *testing.T, in instance) *rollRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &rollRecorder{cancel: cancel, byUID: map[types.UID]*podRecord{}}
	t.Cleanup(r.stop)

	pods := testEnv.Host.Client().CoreV1().Pods(in.namespace)
	selector := prov.InstanceSelector(in.name)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	r.watch(ctx, t, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return pods.Watch(ctx, o)
	}, r.pod)

	karmadas := testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace)
	byName := fields.OneTermEqualSelector("metadata.name", in.name).String()
	klist, err := karmadas.List(ctx, metav1.ListOptions{FieldSelector: byName})
	require.NoError(t, err)
	r.watch(ctx, t, klist.GetResourceVersion(), func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = byName
		return karmadas.Watch(ctx, o)
	}, r.karmada)
	return r
}

// watch handles the events of a watch from resourceVersion on, resumed where it stopped if the
// connection drops.
func (r *rollRecorder) watch(ctx context.Context, t *testing.T, resourceVersion string, fn cache.WatchFuncWithContext, handle func(watch.Event)) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{WatchFuncWithContext: fn})
	require.NoError(t, err)
	r.done.Go(func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				switch {
				case !ok:
					if ctx.Err() == nil {
						r.fail("a watch ended early")
					}
					return
				case ev.Type == watch.Error:
					r.fail(fmt.Sprintf("watch error: %v", ev.Object))
				case ev.Type == watch.Added || ev.Type == watch.Modified:
					handle(ev)
				}
			}
		}
	})
}

func (r *rollRecorder) stop() {
	r.cancel()
	r.done.Wait()
}

func (r *rollRecorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, msg)
}

func (r *rollRecorder) pod(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok || len(p.Spec.Containers) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec := r.byUID[p.UID]
	if rec == nil {
		rec = &podRecord{name: p.Name, component: p.Labels[prov.LabelName], image: p.Spec.Containers[0].Image,
			command: p.Spec.Containers[0].Command, created: r.seq, createdAt: p.CreationTimestamp.Time}
		r.byUID[p.UID] = rec
		r.pods = append(r.pods, rec)
	}
	if rec.ready == 0 && podReady(p) {
		rec.ready = r.seq
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				rec.readyAt = c.LastTransitionTime.Time
			}
		}
	}
}

func (r *rollRecorder) karmada(ev watch.Event) {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var k operatorv1alpha1.Karmada
	if err := kube.FromUnstructured(u, &k); err != nil {
		r.fail(err.Error())
		return
	}
	cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
	if cond == nil {
		return
	}
	c := readyCondition{Generation: cond.ObservedGeneration, Status: cond.Status, Reason: cond.Reason, Message: cond.Message, seen: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.conds); n > 0 {
		last := r.conds[n-1]
		last.seen = c.seen
		if last == c {
			return // another part of the status changed
		}
	}
	r.conds = append(r.conds, c)
}

func (r *rollRecorder) podSeq() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// podsCreatedSince are the pods of component created after event seq, oldest first.
func (r *rollRecorder) podsCreatedSince(seq int, component string) []podRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []podRecord
	for _, p := range r.pods {
		if p.created > seq && p.component == component {
			out = append(out, *p)
		}
	}
	return out
}

func (r *rollRecorder) conditions() []readyCondition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.conds)
}

func (r *rollRecorder) conditionsOf(generation int64, reason string) []readyCondition {
	var out []readyCondition
	for _, c := range r.conditions() {
		if c.Generation == generation && c.Reason == reason {
			out = append(out, c)
		}
	}
	return out
}

func (r *rollRecorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// waitCondition waits for a Ready condition at index from or later that matches, and returns
// its index.
func (r *rollRecorder) waitCondition(t *testing.T, from int, timeout time.Duration, what string, match func(readyCondition) bool) int {
	found := -1
	err := poll(timeout, func() (bool, error) {
		conds := r.conditions()
		for i := from; i < len(conds); i++ {
			if match(conds[i]) {
				found = i
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		var seen []string
		for _, c := range r.conditions()[min(from, len(r.conditions())):] {
			seen = append(seen, fmt.Sprintf("%s gen %d %s %s: %s", c.seen.Format(time.TimeOnly), c.Generation, c.Status, c.Reason, c.Message))
		}
		require.NoError(t, err, "%s; Ready conditions seen:\n%s", what, strings.Join(seen, "\n"))
	}
	return found
}

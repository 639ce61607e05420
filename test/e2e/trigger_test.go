package e2e

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// Names of the test's own workflow, its signal and its query.
const (
	triggerTestWorkflow = "TriggerE2ECountChanges"
	triggerTestSignal   = "change"
	triggerTestQuery    = "changes"
	// triggerTestAnnotation is the one annotation whose changes are relevant.
	triggerTestAnnotation = "e2e.karmadaflow.io/relevant"
)

// countChanges counts the change signals it receives and answers the count to a query.
func countChanges(ctx workflow.Context) error {
	changes := 0
	if err := workflow.SetQueryHandler(ctx, triggerTestQuery, func() (int, error) { return changes, nil }); err != nil {
		return err
	}
	signals := workflow.GetSignalChannel(ctx, triggerTestSignal)
	for {
		var key string
		signals.Receive(ctx, &key)
		changes++
	}
}

// startCountingWorker connects to the environment's Temporal and runs countChanges on taskQueue
// until the test ends.
func startCountingWorker(t *testing.T, logger *zap.Logger, taskQueue string) client.Client {
	t.Helper()
	opts, err := testEnv.Temporal.ClientOptions()
	require.NoError(t, err)
	opts.Logger = observability.TemporalLogger(logger)
	temporal, err := client.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	w := worker.New(temporal, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(countChanges, workflow.RegisterOptions{Name: triggerTestWorkflow})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return temporal
}

// TestTriggerSignalsWorkflowsOfChangedObjects runs a trigger on the ConfigMaps of a new
// namespace of the control plane against the real API server and Temporal: creating a
// ConfigMap starts its workflow, relevant updates and the deletion signal it, and neither
// informer resyncs nor irrelevant updates send anything.
func TestTriggerSignalsWorkflowsOfChangedObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	suffix := utilrand.String(6)
	namespace, taskQueue := "trigger-e2e-"+suffix, "trigger-e2e-"+suffix
	kube := testEnv.ControlPlane.Client()

	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	})

	temporal := startCountingWorker(t, logger, taskQueue)

	// The trigger under test: ConfigMaps of the namespace, resynced every second.
	factory := informers.NewSharedInformerFactoryWithOptions(kube, time.Second, informers.WithNamespace(namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	var handled, resyncs atomic.Int32
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if oldObj.(*corev1.ConfigMap).ResourceVersion == newObj.(*corev1.ConfigMap).ResourceVersion {
				resyncs.Add(1)
			}
		},
	})
	require.NoError(t, err)
	dataChanged := func(oldObj, newObj metav1.Object) bool {
		return oldObj.(*corev1.ConfigMap).Data["value"] != newObj.(*corev1.ConfigMap).Data["value"]
	}
	annotationChanged := trigger.GenerationOrMetadata(nil, []string{triggerTestAnnotation})
	workflowID := func(namespace, name string) string { return "e2e-configmap/" + namespace + "/" + name }
	tr, err := trigger.New(trigger.Config{
		Name:     "e2e-configmaps",
		Informer: informer,
		Key: func(obj any) (string, error) {
			key, err := trigger.ObjectKey(obj)
			if key == namespace+"/kube-root-ca.crt" { // published into every namespace
				return "", err
			}
			return key, err
		},
		Relevant: func(oldObj, newObj metav1.Object) bool {
			return annotationChanged(oldObj, newObj) || dataChanged(oldObj, newObj)
		},
		Handle: func(ctx context.Context, key string) error {
			handled.Add(1)
			namespace, name, err := trigger.SplitKey(key)
			if err != nil {
				return err
			}
			return trigger.SignalWithStart(ctx, temporal, trigger.Start{
				WorkflowID: workflowID(namespace, name),
				Workflow:   triggerTestWorkflow,
				TaskQueue:  taskQueue,
				Signal:     triggerTestSignal,
				SignalArg:  key,
			})
		},
		Logger: logger,
	})
	require.NoError(t, err)
	runCtx, stopTrigger := context.WithCancel(ctx)
	triggerDone := make(chan struct{})
	defer func() {
		stopTrigger()
		<-triggerDone
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() {
		defer close(triggerDone)
		tr.Run(runCtx)
	}()
	require.Eventually(t, tr.HasSynced, 30*time.Second, 50*time.Millisecond, "trigger never synced")

	configMaps := kube.CoreV1().ConfigMaps(namespace)
	id := workflowID(namespace, "app")
	t.Cleanup(func() { _ = temporal.TerminateWorkflow(context.Background(), id, "", "test done") })
	// changes is the count of signals the workflow has received; -1 before it started.
	changes := func() (int, error) {
		value, err := temporal.QueryWorkflow(ctx, id, "", triggerTestQuery)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
		var n int
		return n, value.Get(&n)
	}
	requireChanges := func(want int, why string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			n, err := changes()
			require.NoError(c, err)
			assert.Equal(c, want, n, "%s: signals received by the workflow", why)
		}, 30*time.Second, 100*time.Millisecond)
	}
	// waitSeen returns once the informer's cache holds resourceVersion of the ConfigMap.
	waitSeen := func(cm *corev1.ConfigMap) {
		t.Helper()
		require.Eventually(t, func() bool {
			obj, exists, err := informer.GetStore().GetByKey(namespace + "/" + cm.Name)
			return err == nil && exists && obj.(*corev1.ConfigMap).ResourceVersion == cm.ResourceVersion
		}, 30*time.Second, 50*time.Millisecond)
	}

	// Create: SignalWithStart starts the workflow with the first signal.
	cm, err := configMaps.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Data:       map[string]string{"value": "1"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	requireChanges(1, "create")

	// An irrelevant annotation and several resyncs: nothing is sent.
	cm.Annotations = map[string]string{"note": "irrelevant"}
	cm, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitSeen(cm)
	resyncsBefore := resyncs.Load()
	require.Eventually(t, func() bool { return resyncs.Load() >= resyncsBefore+3 }, 30*time.Second, 100*time.Millisecond,
		"the informer did not resync")
	n, err := changes()
	require.NoError(t, err)
	require.Equal(t, 1, n, "irrelevant update or resync signalled the workflow")
	require.Equal(t, int32(1), handled.Load(), "irrelevant update or resync reached the handler")

	// Relevant changes: data, then the relevant annotation.
	cm.Data["value"] = "2"
	cm, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	requireChanges(2, "data update")

	cm.Annotations[triggerTestAnnotation] = "yes"
	_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	requireChanges(3, "relevant annotation update")

	// Deletion is relevant.
	require.NoError(t, configMaps.Delete(ctx, "app", metav1.DeleteOptions{}))
	requireChanges(4, "delete")

	// The first run received every signal: one entity workflow per object.
	description, err := temporal.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, description.WorkflowExecutionInfo.Status)
}

// TestSignalOrStartStartsOnlyWhenNoneRuns sends SignalOrStart to the real Temporal server: the
// first call starts the workflow with its signal, the next ones signal that same run, and
// after the run ends the next call starts a new one.
func TestSignalOrStartStartsOnlyWhenNoneRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	taskQueue := "signal-or-start-e2e-" + utilrand.String(6)
	temporal := startCountingWorker(t, logger, taskQueue)

	id := "e2e-signal-or-start/" + taskQueue
	t.Cleanup(func() { _ = temporal.TerminateWorkflow(context.Background(), id, "", "test done") })
	send := func(wantStarted bool) {
		t.Helper()
		started, err := trigger.SignalOrStart(ctx, temporal, trigger.Start{
			WorkflowID: id, Workflow: triggerTestWorkflow, TaskQueue: taskQueue,
			Signal: triggerTestSignal, SignalArg: "change",
		})
		require.NoError(t, err)
		require.Equal(t, wantStarted, started, "started")
	}
	requireRun := func(wantChanges int) string {
		t.Helper()
		var runID string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			value, err := temporal.QueryWorkflow(ctx, id, "", triggerTestQuery)
			require.NoError(c, err)
			var n int
			require.NoError(c, value.Get(&n))
			assert.Equal(c, wantChanges, n, "signals received by the running workflow")
			description, err := temporal.DescribeWorkflowExecution(ctx, id, "")
			require.NoError(c, err)
			assert.Equal(c, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, description.WorkflowExecutionInfo.Status)
			runID = description.WorkflowExecutionInfo.Execution.RunId
		}, 30*time.Second, 100*time.Millisecond)
		return runID
	}

	send(true)
	first := requireRun(1)
	send(false)
	send(false)
	require.Equal(t, first, requireRun(3), "a running workflow is signalled, not started again")

	require.NoError(t, temporal.TerminateWorkflow(ctx, id, first, "ended by the test"))
	send(true)
	require.NotEqual(t, first, requireRun(1), "with no run left, the signal starts a new one")
}

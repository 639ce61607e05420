package env

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// cancelledRequestsFor is how long assertOutlivesCancelledRequests cancels requests: a dev
// server whose SQLite driver breaks on them (modernc.org/sqlite v1.34.1) broke within 2-7 s.
const cancelledRequestsFor = 15 * time.Second

// assertOutlivesCancelledRequests sends the dev server requests that reach its database and
// cancels most of them within 3 ms, as a worker's shutdown cancels its calls, then requires
// that it still serves: a cancelled query must not leave its one database connection
// interrupted for every later call.
func assertOutlivesCancelledRequests(t *testing.T, address, namespace string) {
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace})
	require.NoError(t, err)
	defer c.Close()
	svc := c.WorkflowService()

	var sent, cancelled atomic.Int64
	var interrupted atomic.Value
	end := time.Now().Add(cancelledRequestsFor)
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			r := rand.New(rand.NewSource(int64(g)))
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.Intn(3000))*time.Microsecond)
				err := cancellableRequest(ctx, svc, namespace, r)
				timedOut := ctx.Err() != nil
				cancel()
				sent.Add(1)
				if timedOut {
					cancelled.Add(1)
				} else if err != nil && strings.Contains(err.Error(), "interrupted") {
					interrupted.Store(err.Error())
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests sent, %d of them cancelled", sent.Load(), cancelled.Load())

	// The frontend may answer "rate limit exceeded" for a moment after the burst; a broken
	// database answers "interrupted" for good.
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, last = svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		if last == nil {
			_, last = svc.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace})
		}
		cancel()
		if last == nil {
			return
		}
	}
	if during := interrupted.Load(); during != nil {
		t.Logf("a request that was not cancelled failed during them: %v", during)
	}
	t.Fatalf("the dev server no longer serves after cancelled requests: %v", last)
}

// cancellableRequest sends one of the requests that read or write the dev server's database.
func cancellableRequest(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace string, r *rand.Rand) error {
	workflowID := fmt.Sprintf("cancelled-%d", r.Intn(200))
	taskQueue := &taskqueuepb.TaskQueue{Name: fmt.Sprintf("cancelled-%d", r.Intn(8))}
	var err error
	switch r.Intn(5) {
	case 0:
		_, err = svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	case 1:
		_, err = svc.StartWorkflowExecution(ctx, &workflowservice.StartWorkflowExecutionRequest{Namespace: namespace,
			WorkflowId: workflowID, WorkflowType: &commonpb.WorkflowType{Name: "EnvTestIdle"}, TaskQueue: taskQueue,
			RequestId: fmt.Sprint(r.Int63())})
	case 2:
		_, err = svc.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace,
			Query: "WorkflowType='EnvTestIdle'"})
	case 3:
		_, err = svc.PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{Namespace: namespace, TaskQueue: taskQueue})
	case 4:
		_, err = svc.SignalWorkflowExecution(ctx, &workflowservice.SignalWorkflowExecutionRequest{Namespace: namespace,
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID}, SignalName: "cancelled",
			RequestId: fmt.Sprint(r.Int63())})
	}
	return err
}

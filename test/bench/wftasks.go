package bench

import (
	"context"
	"fmt"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// TaskCounts are the workflow tasks of a set of histories, by how each ended.
type TaskCounts struct {
	Workflows int
	Completed int // workflow tasks completed (heartbeats included)
	// Heartbeats are completed tasks that only kept a task open for its local activities: the
	// next task was scheduled right after, with nothing but the task's own commands between.
	Heartbeats int
	TimedOut   int // started and not completed in time
	// StickyTimedOut are tasks that waited on a worker's sticky queue longer than its
	// schedule-to-start timeout and went to the shared queue.
	StickyTimedOut int
	Failed         int
	Events         int
	ReadErrors     int
}

// commandEvents are the event types a workflow task's own commands write after its
// WorkflowTaskCompleted: seeing only these before the next WorkflowTaskScheduled means no
// signal, timer, activity or child result asked for that task.
var commandEvents = map[enumspb.EventType]bool{
	enumspb.EVENT_TYPE_MARKER_RECORDED:                                      true,
	enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:                              true,
	enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:                       true,
	enumspb.EVENT_TYPE_TIMER_STARTED:                                        true,
	enumspb.EVENT_TYPE_TIMER_CANCELED:                                       true,
	enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:                    true,
	enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:                         true,
	enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:         true,
	enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:             true,
	enumspb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: true,
}

// countTasks counts the workflow tasks of one history.
func countTasks(events []*historypb.HistoryEvent) TaskCounts {
	var c TaskCounts
	afterCompleted := false // only the last completed task's command events since it
	for _, e := range events {
		c.Events++
		switch t := e.GetEventType(); {
		case t == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			c.Completed++
			afterCompleted = true
		case t == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			if afterCompleted {
				c.Heartbeats++
			}
			afterCompleted = false
		case t == enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			if e.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				c.StickyTimedOut++
			} else {
				c.TimedOut++
			}
			afterCompleted = false
		case t == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			c.Failed++
			afterCompleted = false
		case !commandEvents[t]:
			afterCompleted = false
		}
	}
	return c
}

func (c *TaskCounts) add(o TaskCounts) {
	c.Workflows += o.Workflows
	c.Completed += o.Completed
	c.Heartbeats += o.Heartbeats
	c.TimedOut += o.TimedOut
	c.StickyTimedOut += o.StickyTimedOut
	c.Failed += o.Failed
	c.Events += o.Events
	c.ReadErrors += o.ReadErrors
}

// WorkflowTasks reads the current run's history of each workflow and counts its workflow
// tasks, 8 histories at a time.
func (b *Bench) WorkflowTasks(ctx context.Context, workflowIDs []string) (TaskCounts, error) {
	c, err := b.Temporal()
	if err != nil {
		return TaskCounts{}, err
	}
	var mu sync.Mutex
	var total TaskCounts
	_ = parallel(ctx, len(workflowIDs), 8, func(ctx context.Context, i int) error {
		var events []*historypb.HistoryEvent
		iter := c.GetWorkflowHistory(ctx, workflowIDs[i], "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		one := TaskCounts{Workflows: 1}
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				one = TaskCounts{Workflows: 1, ReadErrors: 1}
				events = nil
				break
			}
			events = append(events, e)
		}
		if one.ReadErrors == 0 {
			one = countTasks(events)
			one.Workflows = 1
		}
		mu.Lock()
		total.add(one)
		mu.Unlock()
		return nil
	})
	return total, ctx.Err()
}

// String is the counts as a sentence of the report.
func (c TaskCounts) String() string {
	s := fmt.Sprintf("%d workflow tasks completed in %d histories (%d events), %d of them heartbeats of a task waiting for its local activities; %d timed out after they started, %d waited past the sticky queue's timeout, %d failed",
		c.Completed, c.Workflows, c.Events, c.Heartbeats, c.TimedOut, c.StickyTimedOut, c.Failed)
	if c.ReadErrors > 0 {
		s += fmt.Sprintf(" (%d histories not read)", c.ReadErrors)
	}
	return s
}

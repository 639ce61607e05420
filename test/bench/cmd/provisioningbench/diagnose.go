package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/test/bench"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// diagnose tells, for every instance that did not become Ready, where its workflow waits and
// what its pods that are not Ready say: their container states and the end of their logs.
func (b *provisioningBench) diagnose(ctx context.Context, r *bench.Report, ns string, results []*result) {
	pods, err := b.env.Host.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: prov.LabelManagedBy + "=" + prov.ManagedBy})
	if err != nil {
		r.Printf("\n(pods unavailable: %v)\n", err)
		return
	}
	for _, res := range results {
		if res.ready != 0 {
			continue
		}
		r.Printf("\n`%s/%s` not Ready (%s). Workflow: %s.\n", ns, res.name, res.last, b.pendingActivities(ctx, ns, res.name))
		var lines []string
		for _, p := range podsOf(pods.Items, res.name) {
			if podReady(p) {
				continue
			}
			lines = append(lines, fmt.Sprintf("pod %s (%s), phase %s: %s", p.Name, p.Labels[prov.LabelName], p.Status.Phase, containerStates(p)))
			for _, c := range p.Spec.Containers {
				lines = append(lines, logTail(filepath.Join(b.env.PodsDir(), "logs", fmt.Sprintf("%s_%s_%s.log", ns, p.Name, c.Name)), 8)...)
			}
		}
		if len(lines) > 0 {
			r.Code(strings.Join(lines, "\n"))
		}
	}
}

// pendingActivities names the activities the instance's workflow runs, with their attempt
// and last failure.
func (b *provisioningBench) pendingActivities(ctx context.Context, ns, name string) string {
	d, err := b.temporal.DescribeWorkflowExecution(ctx, wf.WorkflowID(ns, name), "")
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, a := range d.GetPendingActivities() {
		part := fmt.Sprintf("activity %s, attempt %d", a.GetActivityType().GetName(), a.GetAttempt())
		if f := a.GetLastFailure(); f != nil {
			part += fmt.Sprintf(", last failure %.300q", f.GetMessage())
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "status " + d.GetWorkflowExecutionInfo().GetStatus().String() + ", no pending activity"
	}
	return strings.Join(parts, "; ")
}

func containerStates(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			parts = append(parts, fmt.Sprintf("%s running, ready %v (restarts %d)", c.Name, c.Ready, c.RestartCount))
		case c.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s (restarts %d): %.200s", c.Name, c.State.Waiting.Reason, c.RestartCount, c.State.Waiting.Message))
		case c.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated %s", c.Name, c.State.Terminated.Reason))
		}
	}
	return strings.Join(parts, "; ")
}

// logTail is the last n lines of a log, each cut at 300 characters.
func logTail(path string, n int) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{"  (" + err.Error() + ")"}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	for _, l := range lines[max(0, len(lines)-n):] {
		out = append(out, fmt.Sprintf("  %s: %.300s", filepath.Base(path), l))
	}
	return out
}

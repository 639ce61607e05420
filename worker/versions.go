package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"

	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// versionsTimeout bounds the whole `worker versions`: a few dozen visibility counts.
const versionsTimeout = 2 * time.Minute

// versionedWorkflows are the workflow types `worker versions` reports, with their changes.
var versionedWorkflows = []versioning.Workflow{
	{Type: mcs.WorkflowName, Changes: mcs.VersionChanges},
	{Type: execution.WorkflowName, Changes: execution.VersionChanges},
	{Type: clusterhealth.WorkflowName, Changes: clusterhealth.VersionChanges},
	{Type: provisioning.WorkflowName, Changes: provisioning.VersionChanges},
}

// runVersions is `worker versions`: it prints, for every workflow type and change, how many
// runs in the namespace's visibility are on each version and on DefaultVersion, and whether
// that branch may be removed (package versioning), then exits. It changes nothing.
func runVersions(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, versionsTimeout)
	defer cancel()
	temporal, err := dialTemporal(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer temporal.Close()
	namespace, err := temporal.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.TemporalNamespace})
	if err != nil {
		return fmt.Errorf("describing namespace %q: %w", opts.TemporalNamespace, err)
	}
	runs, err := versioning.CountRuns(ctx, temporal, versionedWorkflows)
	if err != nil {
		return err
	}
	retention := namespace.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	return versioning.WriteTable(os.Stdout, opts.TemporalNamespace, retention, runs)
}

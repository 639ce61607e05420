package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/options"
)

// Every capability a worker can have names the workflow type it runs, so that
// capabilities.CheckStarted sees the workflows of every capability the worker lacks.
func TestEveryCapabilityHasItsWorkflowType(t *testing.T) {
	o := options.Default(options.Worker)
	o.EnableWorkExecution, o.EnableClusterHealth, o.EnableProvisioning = true, true, true
	assert.Equal(t, []string(capabilities.Of(o)), slices.Sorted(maps.Keys(capabilityWorkflows)))
}

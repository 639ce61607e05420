package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Every capability runs a workflow type, so that its task queue has a poller to look for.
func TestEveryCapabilityHasAWorkflowType(t *testing.T) {
	assert.ElementsMatch(t, naming.Capabilities, slices.Compact(slices.Sorted(maps.Values(workflowCapabilities))))
}

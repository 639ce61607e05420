package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// `worker versions` reports every workflow type the worker runs, each once.
func TestVersionsReportsEveryWorkflowType(t *testing.T) {
	var reported []string
	for _, w := range versionedWorkflows {
		reported = append(reported, w.Type)
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(workflowCapabilities)), reported)
}

package ensure

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

func ids(starts []trigger.Start) []string {
	out := []string{}
	for _, s := range starts {
		out = append(out, s.WorkflowID)
	}
	return out
}

func starts(workflowIDs ...string) []trigger.Start {
	var out []trigger.Start
	for _, id := range workflowIDs {
		out = append(out, trigger.Start{WorkflowID: id})
	}
	return out
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wanted  []trigger.Start
		running []string
		want    []string
	}{
		{"nothing wanted", nil, []string{"mcs/a/x"}, []string{}},
		{"all running", starts("mcs/a/x", "mcs/a/y"), []string{"mcs/a/y", "mcs/a/x"}, []string{}},
		{"none running", starts("mcs/b/z", "mcs/a/x"), nil, []string{"mcs/a/x", "mcs/b/z"}},
		{"some running", starts("mcs/a/x", "mcs/a/y", "mcs/a/z"), []string{"mcs/a/y"}, []string{"mcs/a/x", "mcs/a/z"}},
		{"running but not wanted (object gone) is left alone", starts("mcs/a/x"), []string{"mcs/a/gone"}, []string{"mcs/a/x"}},
		{"wanted twice is started once", starts("cluster/m1", "cluster/m1"), nil, []string{"cluster/m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := map[string]bool{}
			for _, id := range tc.running {
				running[id] = true
			}
			assert.Equal(t, tc.want, ids(Missing(tc.wanted, running)))
		})
	}
}

func TestMissingKeepsTheStart(t *testing.T) {
	wanted := []trigger.Start{{WorkflowID: "mcs/a/x", Workflow: "MultiClusterService", Signal: "change", TaskQueue: "karmadaflow"}}
	assert.Equal(t, wanted, Missing(wanted, nil))
}

func TestQuery(t *testing.T) {
	assert.Equal(t, `WorkflowType='MultiClusterService' AND TaskQueue='karmadaflow' AND ExecutionStatus='Running'`,
		Query("MultiClusterService", "karmadaflow"))
}

package bench

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// readyTransition is a change of a Cluster's Ready condition as a watch saw it.
type readyTransition struct {
	At              time.Time
	Cluster, Status string
	Reason, Message string
}

// clusterHealth remembers every change of the Clusters' Ready condition during the run.
type clusterHealth struct {
	mu          sync.Mutex
	last        map[string]string
	transitions []readyTransition
}

// WatchClusters records the Ready transitions of every Cluster in the control plane until ctx
// ends; ClusterSection reports them.
func (b *Bench) WatchClusters(ctx context.Context) error {
	return b.watchControlPlane(ctx, kube.Clusters, "", nil, func(u *unstructured.Unstructured, deleted bool, at time.Time) {
		t := readyTransition{At: at, Cluster: u.GetName(), Status: "(deleted)"}
		if !deleted {
			t.Status = "(no Ready condition)"
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
					t.Status, _ = m["status"].(string)
					t.Reason, _ = m["reason"].(string)
					t.Message, _ = m["message"].(string)
				}
			}
		}
		h := &b.health
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.last == nil {
			h.last = map[string]string{}
		}
		if prev, seen := h.last[t.Cluster]; seen && prev == t.Status {
			return
		}
		h.last[t.Cluster] = t.Status
		h.transitions = append(h.transitions, t)
	})
}

// ClusterSection reports the Clusters' Ready transitions (after the first state of each).
func (b *Bench) ClusterSection(r *Report) {
	h := &b.health
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Heading(2, "Cluster health during the run")
	var rows [][]string
	first := map[string]bool{}
	changes := 0
	for _, t := range h.transitions {
		kind := "initial"
		if first[t.Cluster] {
			kind = "change"
			changes++
		}
		first[t.Cluster] = true
		rows = append(rows, []string{t.At.UTC().Format("15:04:05.000"), t.Cluster, kind, t.Status, t.Reason, t.Message})
	}
	r.Printf("Ready condition of each Cluster as a watch on the control plane saw it; %d changes after the initial states. "+
		"Each change restarts the starter's EndpointSlice watch of that member and signals every MultiClusterService.\n\n", changes)
	r.Table([]string{"time (UTC)", "cluster", "", "Ready", "reason", "message"}, rows)
	b.phasesMu.Lock()
	defer b.phasesMu.Unlock()
	if len(b.phases) > 0 {
		r.Printf("\nPhases: ")
		for i, p := range b.phases {
			if i > 0 {
				r.Printf(", ")
			}
			r.Printf("%s %s", p.name, p.at.UTC().Format("15:04:05.000"))
		}
		r.Printf(".\n")
	}
}

// phase is a named moment of the run, to place the transitions.
type phase struct {
	name string
	at   time.Time
}

// Mark records the start of a phase of the run.
func (b *Bench) Mark(name string) {
	b.phasesMu.Lock()
	defer b.phasesMu.Unlock()
	b.phases = append(b.phases, phase{name: name, at: time.Now()})
}

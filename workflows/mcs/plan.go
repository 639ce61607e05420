package mcs

import (
	"slices"
	"strconv"
	"strings"
	"time"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// Reasons karmadaflow adds to those of the API.
const (
	ReasonEndpointSliceAppliedPending = act.ReasonEndpointSliceAppliedPending
)

// Plan is who takes part in a MultiClusterService right now.
type Plan struct {
	Providers []string // existing provider clusters, sorted
	Consumers []string // existing consumer clusters, sorted
	// UnknownProviders and UnknownConsumers are named in the spec but do not exist.
	UnknownProviders []string
	UnknownConsumers []string
	// Withdrawn providers have been not Ready for longer than the grace.
	Withdrawn []string
	// NextWithdrawal is when the next not-Ready provider's grace runs out (zero if none).
	NextWithdrawal time.Time
}

// ServiceClusters are the clusters that receive the Service: providers and consumers.
func (p Plan) ServiceClusters() []string { return union(p.Providers, p.Consumers) }

// Sources are the providers whose slices consumer receives.
func (p Plan) Sources(consumer string) []string {
	var out []string
	for _, provider := range p.Providers {
		if provider != consumer && !slices.Contains(p.Withdrawn, provider) {
			out = append(out, provider)
		}
	}
	return out
}

// MakePlan resolves the spec's cluster lists against the clusters that exist, and decides which
// providers are withdrawn at now.
func MakePlan(obs act.Observation, now time.Time) Plan {
	existing := make([]string, 0, len(obs.Clusters))
	for _, c := range obs.Clusters {
		existing = append(existing, c.Name)
	}
	var plan Plan
	plan.Providers, plan.UnknownProviders = resolve(obs.Providers, existing)
	plan.Consumers, plan.UnknownConsumers = resolve(obs.Consumers, existing)
	for _, c := range obs.Clusters {
		if c.Ready || !slices.Contains(plan.Providers, c.Name) {
			continue
		}
		// lastTransitionTime has one-second precision: count the grace from the end of that
		// second, so that a provider is never withdrawn early.
		deadline := c.Since.Truncate(time.Second).Add(time.Second + obs.UnhealthyGrace)
		if c.Since.IsZero() || !deadline.After(now) {
			plan.Withdrawn = append(plan.Withdrawn, c.Name)
		} else if plan.NextWithdrawal.IsZero() || deadline.Before(plan.NextWithdrawal) {
			plan.NextWithdrawal = deadline
		}
	}
	return plan
}

// resolve returns the named clusters that exist and those that do not; no names means all.
func resolve(named, existing []string) (found, unknown []string) {
	if len(named) == 0 {
		return slices.Clone(existing), nil
	}
	for _, name := range sortedUnique(named) {
		if slices.Contains(existing, name) {
			found = append(found, name)
		} else {
			unknown = append(unknown, name)
		}
	}
	return found, unknown
}

func sortedUnique(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

func union(a, b []string) []string { return sortedUnique(append(slices.Clone(a), b...)) }

// Outcome is what one reconcile found, from which the conditions follow.
type Outcome struct {
	ServiceErr  string            // propagation failure
	CollectErrs map[string]string // provider -> error
	DispatchErr map[string]string // consumer -> error
	Applied     []act.ConsumerApplied
	Unreachable []string // consumers not Ready: not counted for EndpointSliceApplied
}

// conditions derives the four conditions of a CrossCluster MultiClusterService whose Service
// exists.
func conditions(plan Plan, out Outcome) []act.Condition {
	conds := make([]act.Condition, 0, 4)
	if out.ServiceErr != "" {
		conds = append(conds, condition(networkingv1alpha1.ConditionServiceApplied, false, networkingv1alpha1.ReasonServiceAppliedFailed, out.ServiceErr))
	} else {
		conds = append(conds, condition(networkingv1alpha1.ConditionServiceApplied, true, networkingv1alpha1.ReasonServiceAppliedSuccess, networkingv1alpha1.MessageServiceAppliedSuccess))
	}

	var problems []string
	for _, p := range plan.UnknownProviders {
		problems = append(problems, "provider cluster "+p+" not found")
	}
	for _, p := range sortedKeys(out.CollectErrs) {
		problems = append(problems, "failed to list&watch EndpointSlice in "+p+": "+out.CollectErrs[p])
	}
	for _, p := range plan.Withdrawn {
		problems = append(problems, act.WithdrawnProblem(p))
	}
	if len(problems) > 0 {
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceCollected, false, networkingv1alpha1.ReasonEndpointSliceCollectedFailed, strings.Join(problems, "; ")))
	} else {
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceCollected, true, networkingv1alpha1.ReasonEndpointSliceCollectedSuccess, "EndpointSlices are collected from provider clusters."))
	}

	problems = nil
	for _, c := range plan.UnknownConsumers {
		problems = append(problems, "consumer cluster "+c+" not found")
	}
	for _, c := range sortedKeys(out.DispatchErr) {
		problems = append(problems, "failed to dispatch EndpointSlices to "+c+": "+out.DispatchErr[c])
	}
	if len(problems) > 0 {
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceDispatched, false, networkingv1alpha1.ReasonEndpointSliceDispatchedFailed, strings.Join(problems, "; ")))
	} else {
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceDispatched, true, networkingv1alpha1.ReasonEndpointSliceDispatchedSuccess, "EndpointSlices are dispatched to consumer clusters."))
	}

	var failed, pending []string
	for _, a := range out.Applied {
		switch {
		case slices.Contains(out.Unreachable, a.Consumer):
		case a.Message != "":
			failed = append(failed, a.Consumer+": "+a.Message)
		case a.Applied < a.Works:
			pending = append(pending, a.Consumer+" ("+strconv.Itoa(a.Applied)+" of "+strconv.Itoa(a.Works)+" applied)")
		}
	}
	switch {
	case len(failed) > 0:
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceApplied, false, networkingv1alpha1.ReasonEndpointSliceAppliedFailed, "EndpointSlices failed to apply in "+strings.Join(failed, "; ")))
	case len(pending) > 0:
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceApplied, false, ReasonEndpointSliceAppliedPending, "EndpointSlices not yet applied in "+strings.Join(pending, ", ")))
	default:
		msg := networkingv1alpha1.MessageEndpointSliceAppliedSuccess
		if len(out.Unreachable) > 0 {
			msg += " Unreachable consumers not checked: " + strings.Join(out.Unreachable, ", ") + "."
		}
		conds = append(conds, condition(networkingv1alpha1.ConditionEndpointSliceApplied, true, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess, msg))
	}
	return conds
}

// serviceOnlyConditions is the status when the Service is not propagated at all: the
// ServiceApplied condition says why and the EndpointSlice conditions are dropped.
func serviceOnlyConditions(reason, message string) []act.Condition {
	return []act.Condition{condition(networkingv1alpha1.ConditionServiceApplied, false, reason, message)}
}

func condition(t string, ok bool, reason, message string) act.Condition {
	status := "False"
	if ok {
		status = "True"
	}
	return act.Condition{Type: t, Status: status, Reason: reason, Message: message}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	// The keys are sorted below.
	//workflowcheck:ignore
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

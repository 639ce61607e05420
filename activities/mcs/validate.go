package mcs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// MaxClusterNameLength is the longest cluster name a MultiClusterService may name.
const MaxClusterNameLength = 48

// Validate lists every problem of a MultiClusterService, each naming its field. The CRD
// refuses these objects already; this catches objects that came in through another CRD.
func Validate(mcs *networkingv1alpha1.MultiClusterService) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	for _, msg := range validation.IsDNS1035Label(mcs.Name) {
		add("metadata.name %q: %s", mcs.Name, msg)
	}

	spec := mcs.Spec
	if len(spec.Types) == 0 {
		add("spec.types: at least one type is required")
	}
	distinct := map[string]bool{}
	for i, t := range spec.Types {
		switch string(t) {
		case TypeCrossCluster, TypeLoadBalancer:
			distinct[string(t)] = true
		default:
			add("spec.types[%d] %q: must be CrossCluster or LoadBalancer", i, t)
		}
	}
	if len(distinct) > 1 {
		add("spec.types: at most one distinct type is supported")
	}

	names := map[string]int{}
	for i, p := range spec.Ports {
		if p.Port < 1 || p.Port > 65535 {
			add("spec.ports[%d].port %d: must be between 1 and 65535", i, p.Port)
		}
		if p.Name == "" {
			continue
		}
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			add("spec.ports[%d].name %q: %s", i, p.Name, msg)
		}
		if j, dup := names[p.Name]; dup {
			add("spec.ports[%d].name %q: duplicates spec.ports[%d].name", i, p.Name, j)
		}
		names[p.Name] = i
	}

	checkCluster := func(field, name string) {
		switch {
		case name == "":
			add("%s: cluster name must not be empty", field)
		case len(name) > MaxClusterNameLength:
			add("%s %q: cluster name must be at most %d characters", field, name, MaxClusterNameLength)
		default:
			for _, msg := range validation.IsDNS1123Label(name) {
				add("%s %q: %s", field, name, msg)
			}
		}
	}
	for i, c := range spec.ProviderClusters {
		checkCluster(fmt.Sprintf("spec.providerClusters[%d].name", i), c.Name)
	}
	for i, c := range spec.ConsumerClusters {
		checkCluster(fmt.Sprintf("spec.consumerClusters[%d].name", i), c.Name)
	}
	for i, c := range spec.RangeClusters() {
		checkCluster(fmt.Sprintf("spec.range.clusterNames[%d]", i), c)
	}
	for i, c := range spec.ServiceProvisionClusters {
		checkCluster(fmt.Sprintf("spec.serviceProvisionClusters[%d]", i), c)
	}
	for i, c := range spec.ServiceConsumptionClusters {
		checkCluster(fmt.Sprintf("spec.serviceConsumptionClusters[%d]", i), c)
	}
	return problems
}

// Exposure types.
const (
	TypeCrossCluster = "CrossCluster"
	TypeLoadBalancer = "LoadBalancer"
)

func hasType(types []networkingv1alpha1.ExposureType, want string) bool {
	for _, t := range types {
		if string(t) == want {
			return true
		}
	}
	return false
}

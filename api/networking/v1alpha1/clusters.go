package v1alpha1

import "slices"

// ClusterLists returns the providers and consumers the spec names; an empty list means every
// cluster. The deprecated fields count only where the new ones are empty; range.clusterNames
// names clusters that are both.
func (s *MultiClusterServiceSpec) ClusterLists() (providers, consumers []string) {
	for _, c := range s.ProviderClusters {
		providers = append(providers, c.Name)
	}
	for _, c := range s.ConsumerClusters {
		consumers = append(consumers, c.Name)
	}
	if len(providers) == 0 {
		providers = append(providers, s.ServiceProvisionClusters...)
	}
	if len(consumers) == 0 {
		consumers = append(consumers, s.ServiceConsumptionClusters...)
	}
	if len(providers) == 0 {
		providers = append(providers, s.RangeClusters()...)
	}
	if len(consumers) == 0 {
		consumers = append(consumers, s.RangeClusters()...)
	}
	return providers, consumers
}

// RangeClusters are the clusters the deprecated range.clusterNames names.
func (s *MultiClusterServiceSpec) RangeClusters() []string {
	if s.Range == nil {
		return nil
	}
	return s.Range.ClusterNames
}

// Involves tells whether cluster provides or consumes the Service: named in either list, or
// either list is empty (every cluster).
func (s *MultiClusterServiceSpec) Involves(cluster string) bool {
	providers, consumers := s.ClusterLists()
	return len(providers) == 0 || len(consumers) == 0 || slices.Contains(providers, cluster) || slices.Contains(consumers, cluster)
}

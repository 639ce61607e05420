// Package mcs does the I/O of a MultiClusterService: it reads the object, its Service and the
// Clusters, writes the Works that propagate the Service, collect provider EndpointSlices and
// dispatch them per consumer, and writes the status. Every write is idempotent.
package mcs

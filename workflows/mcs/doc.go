// Package mcs holds the decisions of a MultiClusterService: one entity workflow per object
// propagates its Service, collects EndpointSlices from providers and dispatches them to every
// consumer, keeps the status conditions, and removes everything when the object goes.
package mcs

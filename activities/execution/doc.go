// Package execution applies Works to member clusters (standalone mode, in place of Karmada's
// execution controller): the manifests of each non-suspended Work in karmada-es-<cluster> are
// server-side applied to that cluster, removed from it when the Work goes, and the Work's
// Applied condition and manifest statuses are written back. The MultiClusterService activities
// call it too (ApplyWork, ApplyWhileWriting), to apply a Work as they write it; when to apply
// which Works is workflows/execution's.
package execution

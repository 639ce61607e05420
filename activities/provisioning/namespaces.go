package provisioning

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
)

// The namespaces the worker provisions: those where its RBAC lets it write what a control plane
// is made of (the chart's provisioning.namespaces, given to the worker as
// --provisioning-namespaces). A Karmada of another namespace is refused before anything is
// read or written there, instead of failing on every request it is not allowed to make.

// provisions tells whether the worker provisions the Karmadas of namespace.
func (a *Activities) provisions(namespace string) bool {
	return a.Namespaces == nil || slices.Contains(a.Namespaces, namespace)
}

// outsideNamespaces is the problem of a Karmada of a namespace the worker does not provision.
// It names no other namespace: the tenant who reads it need not learn the others.
func outsideNamespaces(namespace string) string {
	return fmt.Sprintf("metadata.namespace: %s is not one of the worker's provisioning namespaces (its --provisioning-namespaces, "+
		"the chart's provisioning.namespaces), where alone it may write a Karmada's objects: nothing is installed", namespace)
}

// ErrNamespaceNotProvisioned is the ApplicationError type of removing an instance from a
// namespace the worker no longer provisions.
const ErrNamespaceNotProvisioned = "NamespaceNotProvisioned"

// notProvisionedForRemoval is the error of Uninstall in a namespace the worker no longer
// provisions (it was listed when the instance was installed): it may not delete the objects.
func notProvisionedForRemoval(ref Ref) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("namespace %s is no longer one of the worker's provisioning namespaces "+
		"(--provisioning-namespaces): the objects of Karmada %s there cannot be removed; list the namespace again, "+
		"or delete them and the finalizer yourself", ref.Namespace, ref), ErrNamespaceNotProvisioned, nil)
}

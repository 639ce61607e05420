//go:build tools

// Package tools pins apiserver-network-proxy's proxy-server and proxy-agent, which the
// end-to-end tests run to reach a member cluster in Pull mode as Karmada does. They have a
// module of their own so that their dependencies never move those the Kubernetes binaries of
// hack/tools build with.
package tools

import (
	_ "sigs.k8s.io/apiserver-network-proxy/cmd/agent"
	_ "sigs.k8s.io/apiserver-network-proxy/cmd/server"
)

//go:build tools

// Package tools pins the Temporal server, its SQL schema tool and the Web UI server the local
// environment builds from this module. They have a module of their own so that their
// dependencies never move those the Kubernetes binaries of hack/tools build with.
package tools

import (
	_ "github.com/temporalio/ui-server/v2/cmd/server"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)

// Package version holds the version and commit stamped into the worker and starter binaries at
// build time: `make build` and `make images` pass them with
//
//	-ldflags "-X github.com/karmadaflow/karmadaflow/internal/version.Version=... -X github.com/karmadaflow/karmadaflow/internal/version.Commit=..."
//
// A build without the stamp (go build, go run) reports the version "dev" and the commit "unknown".
package version

import (
	"fmt"
	"runtime"
)

// The stamped version (git describe) and commit.
var (
	Version = "dev"
	Commit  = "unknown"
)

// String is the line `--version` prints for program, e.g.
// "worker v0.3.0-2-gabc1234 (commit abc1234..., go1.26.8)".
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s)", program, Version, Commit, runtime.Version())
}

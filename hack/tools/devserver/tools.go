//go:build tools

// Package tools pins the Temporal CLI, whose dev server the local environment runs, with a
// newer SQLite driver than the CLI's own go.mod names. The CLI's modernc.org/sqlite v1.34.1
// can leave the dev server's one SQLite connection interrupted for good once a request is
// cancelled while it queries: from then on every call fails with "interrupted (9)" (seen in
// CI, and within 2-7 s of cancelled requests in the test that guards it, TestEnvironment).
// The CLI v1.9.1, which has a newer driver, cannot be built from the module proxy: it replaces
// a module the proxy does not serve.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"

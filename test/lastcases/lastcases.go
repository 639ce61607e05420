// Package lastcases runs the disruptive cases of an end-to-end test package after every other
// test of that package, one at a time, in the order the package declares, whatever its file
// names: cases that stop members, workers or Temporal must not run before the tests that
// need them whole.
package lastcases

import "testing"

// Case is one disruptive case: its subtest name (the former top-level test name, so that
// -run 'TestDisruptiveCasesLast/<name>' runs it alone) and its body.
type Case struct {
	Name string
	Run  func(*testing.T)
}

// Run is the body of a package's one top-level test of disruptive cases. Go resumes a
// top-level test that called t.Parallel only once every sequential top-level test has
// returned (package testing: Parallel "signals that this test is to be run in parallel with
// (and only with) other parallel tests"), with -shuffle too. So no other top-level test of the
// package may call t.Parallel (test/docs checks it): it would run beside these cases. A case
// that fails does not stop the next ones.
func Run(t *testing.T, cases []Case) {
	t.Parallel()
	for _, c := range cases {
		t.Run(c.Name, c.Run)
	}
}

// Package wftest holds what the workflow packages' unit tests share.
package wftest

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// ContinuedInput decodes into input the input a workflow continued as new with, failing the
// test when err is not a continue-as-new.
func ContinuedInput(t *testing.T, err error, input any) {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("the workflow did not continue as new: %v", err)
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, input); err != nil {
		t.Fatalf("decoding the continued input: %v", err)
	}
}

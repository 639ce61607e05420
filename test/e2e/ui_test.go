package e2e

import (
	"context"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/test/browser"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// uiTimeout bounds the wait for one page of the Temporal UI: chromium loads the whole
// application first, which takes seconds on a busy 2-core machine.
const uiTimeout = 2 * time.Minute

// The Temporal UI, rendered by chromium as an operator sees it, tells what a
// MultiClusterService's workflow did: its steps carry summaries and its current details say
// who takes part.
func TestTemporalUIShowsMCSSteps(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})

	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()
	id := mcs.WorkflowID(ns, app)
	d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	page := testEnv.Temporal.UIURL + "/namespaces/" + url.PathEscape(testEnv.Temporal.Namespace) + "/workflows/" +
		url.PathEscape(id) + "/" + d.WorkflowExecutionInfo.Execution.RunId

	start := time.Now()
	b, err := browser.Start(context.Background())
	require.NoError(t, err)
	defer b.Close()
	t.Logf("chromium started in %.1fs", time.Since(start).Seconds())

	object := regexp.QuoteMeta(ns + "/" + app)
	loaded := time.Now()
	_, err = b.Find(page+"/history", uiTimeout,
		regexp.MustCompile(`read MultiClusterService `+object+`, its Service and the Clusters`),
		regexp.MustCompile(`propagate Service `+object+` to `+m1+`, `+m2),
		regexp.MustCompile(`collect EndpointSlices of `+object+` from `+m1),
		regexp.MustCompile(`dispatch 1 EndpointSlice of `+object+` from `+m1+` to `+m2),
		regexp.MustCompile(`write the status of `+object+`: ServiceApplied=True`),
	)
	require.NoError(t, err)
	t.Logf("the history page showed the step summaries after %.1fs", time.Since(loaded).Seconds())

	loaded = time.Now()
	_, err = b.Find(page+"/user-metadata", uiTimeout,
		regexp.MustCompile(`Ready: MultiClusterService `+object),
		regexp.MustCompile(`providers: `+m1+`\s`),
		regexp.MustCompile(`consumers: `+m2+`\s`),
		regexp.MustCompile(`no retry pending`),
	)
	require.NoError(t, err)
	t.Logf("the user metadata page showed the current details after %.1fs", time.Since(loaded).Seconds())
}

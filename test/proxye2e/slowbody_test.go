package proxye2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trickle is a request body that sends one byte a second until its context ends.
type trickle struct{ ctx context.Context }

func (t trickle) Read(p []byte) (int, error) {
	select {
	case <-t.ctx.Done():
		return 0, t.ctx.Err()
	case <-time.After(time.Second):
	}
	p[0] = ' '
	return 1, nil
}

// TestSlowBodiesOfOneCallerBlockNoOther: alice sends 12 creates whose bodies trickle a byte a
// second, each on a connection of its own, to a worker serving 8 requests at once, 4 of them
// per caller, with a body deadline of 5 s. Another caller's lists are served all the while;
// each of alice's creates ends with 429 (beyond her share) or, for those admitted (4 at
// most), 504 Timeout naming --proxy-request-body-timeout; none reaches the control plane whole.
// Before, alice's bodies held every slot for as long as she liked and the other caller was
// answered 429.
func TestSlowBodiesOfOneCallerBlockNoOther(t *testing.T) {
	const slow = 12
	base := startProxyWorker(t, "worker-slow-bodies", "--proxy-max-requests-inflight=8", "--proxy-max-requests-per-caller=4",
		"--proxy-request-body-timeout=5s")
	pods := base + "/api/v1/namespaces/default/pods"
	newCaller(t, "patient", []string{"get"}, "view")
	tokens["patient"] = newToken(t, "patient")
	c := client(t)
	list := func(caller string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, pods, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tokens[caller])
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool {
		code, _ := list("patient")
		return code == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "the worker does not serve")
	code, body := list("alice")
	require.Equal(t, http.StatusOK, code, "alice is known to the worker: %s", body)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	type answer struct {
		code   int
		status metav1.Status
		err    error
	}
	answers := make(chan answer, slow)
	var sending sync.WaitGroup
	for range slow {
		own := client(t) // a connection of its own
		sending.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/apis/apps/v1/namespaces/default/deployments", trickle{ctx})
			if err != nil {
				answers <- answer{err: err}
				return
			}
			req.Header.Set("Authorization", "Bearer "+tokens["alice"])
			req.Header.Set("Content-Type", "application/json")
			resp, err := own.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			var s metav1.Status
			body, _ := io.ReadAll(resp.Body)
			_ = json.Unmarshal(body, &s)
			answers <- answer{code: resp.StatusCode, status: s}
		})
	}
	// The patient caller lists while alice's bodies trickle, until every one of them is answered.
	done := make(chan struct{})
	go func() { sending.Wait(); close(done) }()
	otherCodes := map[int]int{}
	var otherRefusal string
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(30 * time.Second):
			t.Fatal("alice's slow creates were not all answered within 30 s")
		default:
			code, body := list("patient")
			otherCodes[code]++
			if code != http.StatusOK && otherRefusal == "" {
				otherRefusal = body
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	close(answers)
	aliceCodes := map[int]int{}
	for a := range answers {
		require.NoError(t, a.err, "a slow create got no answer")
		aliceCodes[a.code]++
		switch a.code {
		case http.StatusTooManyRequests:
			// Her share (--proxy-max-requests-per-caller), or, while her requests wait for
			// their review, the proxy's 8 slots.
			assert.Equal(t, metav1.StatusReasonTooManyRequests, a.status.Reason)
		case http.StatusGatewayTimeout:
			assert.Equal(t, metav1.StatusReasonTimeout, a.status.Reason)
			assert.True(t, strings.Contains(a.status.Message, "--proxy-request-body-timeout"), a.status.Message)
		default:
			t.Errorf("a slow create was answered %d: %+v", a.code, a.status)
		}
	}
	t.Logf("alice's %d slow creates: %v; the other caller's lists meanwhile: %v", slow, aliceCodes, otherCodes)
	assert.NotZero(t, aliceCodes[http.StatusGatewayTimeout], "no slow create was admitted, so none timed out")
	assert.LessOrEqual(t, aliceCodes[http.StatusGatewayTimeout], 4, "more slow creates admitted than alice's share")
	assert.NotZero(t, otherCodes[http.StatusOK])
	assert.Equal(t, map[int]int{http.StatusOK: otherCodes[http.StatusOK]}, otherCodes, "the other caller was refused: %s", otherRefusal)
}

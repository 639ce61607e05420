package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trickle is a request body that sends one byte every interval, for ever.
type trickle struct{ interval time.Duration }

func (t trickle) Read(p []byte) (int, error) {
	time.Sleep(t.interval)
	p[0] = ' '
	return 1, nil
}

// TestSlowBodyEndsWithATimeout: a write whose body trickles, to a member object (whose body
// the proxy reads) and to the control plane (which the proxy passes it on to), ends with 504
// Timeout naming the flag once the body deadline passes, instead of holding its slot as long
// as the caller likes; the next request on the server is served.
func TestSlowBodyEndsWithATimeout(t *testing.T) {
	f := newLimitsFixture(t, Limits{RequestBodyTimeout: 500 * time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.proxy.ServeAs(w, r, Caller{Name: "alice"})
	}))
	t.Cleanup(srv.Close)
	for name, path := range map[string]string{
		"member object": "/api/v1/namespaces/default/pods/web",
		"control plane": "/api/v1/namespaces/default/configmaps/slow",
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, srv.URL+BasePath+path, trickle{100 * time.Millisecond})
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			begin := time.Now()
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			require.NoError(t, err, "the proxy answers before it closes")
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, "%s", body)
			var s metav1.Status
			require.NoError(t, json.Unmarshal(body, &s), "%s", body)
			assert.Equal(t, metav1.StatusReasonTimeout, s.Reason)
			assert.Contains(t, s.Message, "--proxy-request-body-timeout")
			t.Logf("answered after %v", time.Since(begin))
		})
	}
	assert.Zero(t, f.members["m1"].putSeen.Load(), "a PUT reached the member")
	resp, err := http.Get(srv.URL + BasePath + podsPath)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestRefusalDoesNotWaitForTheBody: a request refused before its body is read (here a bad
// token) is answered at once over HTTP/1.1, closing the connection, although the body still
// trickles: net/http would otherwise read on in the body before answering.
func TestRefusalDoesNotWaitForTheBody(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL+BasePath+"/api/v1/namespaces/default/configmaps", trickle{100 * time.Millisecond})
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer bad-token")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err, "no answer while the body trickles")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.True(t, resp.Close, "the connection is closed")
}

package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOversizedWatchEventEndsTheWatch: a member whose watch sends an event of 64 MiB, beyond
// a bound of 1 MiB, ends the caller's watch with an ERROR event naming the cluster and the
// flag, after the events before it; the proxy stops reading the member's stream instead of
// holding the event whole (the member could not send it all). Before the bound, the proxy
// read the event whole and passed it on.
func TestOversizedWatchEventEndsTheWatch(t *testing.T) {
	const limit, size = 1 << 20, 64 << 20
	f := newLimitsFixture(t, Limits{MaxWatchEventBytes: limit})
	var sentWhole atomic.Bool
	sent := make(chan struct{})
	for name, m := range f.members {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if name != "m1" {
				<-r.Context().Done()
				return
			}
			defer close(sent)
			_, _ = io.WriteString(w, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"small","resourceVersion":"5"}}}`+"\n")
			w.(http.Flusher).Flush()
			big := io.MultiReader(strings.NewReader(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"big","resourceVersion":"6","annotations":{"a":"`),
				&filler{left: size}, strings.NewReader(`"}}}}`+"\n"))
			if _, err := io.Copy(w, big); err == nil {
				sentWhole.Store(true)
			}
		})
		m.list.Store(&h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.proxy.ServeAs(w, r, Caller{Name: "alice"})
	}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + BasePath + podsPath + "?watch=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var events []struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 2*size)
	for lines.Scan() {
		var e struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &e), "%.200s", lines.Text())
		events = append(events, e)
	}
	require.Len(t, events, 2, "the small event, then the end")
	assert.Equal(t, "ADDED", events[0].Type)
	require.Equal(t, "ERROR", events[1].Type)
	var status metav1.Status
	require.NoError(t, json.Unmarshal(events[1].Object, &status))
	assert.Equal(t, "Status", status.Kind)
	assert.Equal(t, metav1.StatusReasonInternalError, status.Reason)
	assert.Contains(t, status.Message, "cluster m1")
	assert.Contains(t, status.Message, "--proxy-max-watch-event-bytes")

	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the member is still sending: the proxy goes on reading its stream")
	}
	assert.False(t, sentWhole.Load(), "the member sent the whole event: the proxy read it")
}

func TestEventDecoderReadsEventsUpToTheLimit(t *testing.T) {
	one := `{"type":"ADDED","object":{"a":"` + strings.Repeat("x", 100) + `"}}` + "\n"
	d := newEventDecoder(strings.NewReader(strings.Repeat(one, 50)), "m1", int64(len(one)))
	for i := range 50 {
		var e event
		require.NoError(t, d.decode(&e), "event %d, of exactly the limit", i)
		assert.Equal(t, "ADDED", e.Type)
	}
	var e event
	assert.ErrorIs(t, d.decode(&e), io.EOF)

	d = newEventDecoder(strings.NewReader(one), "m1", int64(len(one))-5)
	err := d.decode(&e)
	var tooLarge *eventTooLarge
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, "m1", tooLarge.cluster)
}

// filler is left bytes of 'a', made as they are read.
type filler struct{ left int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	f.left -= n
	return int(n), nil
}

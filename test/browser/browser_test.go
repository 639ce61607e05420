package browser

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A page that renders its text late and in a frame, like a single-page application.
const page = `<html><body><div id="late"></div><iframe src="/frame"></iframe>
<script>setTimeout(() => { document.getElementById("late").innerText = "rendered by script"; }, 500);</script>
</body></html>`

func TestFindReadsWhatScriptsAndFramesRender(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/frame" {
			_, _ = w.Write([]byte("<html><body><ul><li>shown in a frame</li></ul></body></html>"))
			return
		}
		_, _ = w.Write([]byte(page))
	}))
	server.Listener = listener
	server.Start()
	defer server.Close()

	b, err := Start(context.Background())
	require.NoError(t, err)
	defer b.Close()

	text, err := b.Find(server.URL, time.Minute, regexp.MustCompile(`rendered by script`), regexp.MustCompile(`shown in a frame`))
	require.NoError(t, err)
	assert.Contains(t, text, "rendered by script")

	_, err = b.Find(server.URL, 3*time.Second, regexp.MustCompile(`never shown`))
	var notFound *NotFoundError
	require.True(t, errors.As(err, &notFound), "got %v", err)
	assert.Equal(t, []string{"never shown"}, notFound.Missing)
	assert.Contains(t, notFound.Text, "rendered by script")
	dom, err := os.ReadFile(notFound.DOMFile)
	require.NoError(t, err, "the DOM is saved")
	defer os.Remove(notFound.DOMFile)
	assert.True(t, strings.Contains(string(dom), `id="late"`), "the DOM file holds the page")
}

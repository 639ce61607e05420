package redact

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://example.com/crds.tar.gz":                           "https://example.com/crds.tar.gz",
		"https://user:s3cret@example.com/crds.tar.gz":               "https://user:xxxxx@example.com/crds.tar.gz",
		"https://bucket.example.com/crds.tar.gz?X-Amz-Signature=ab": "https://bucket.example.com/crds.tar.gz?xxxxx",
		"socks5://u:p@127.0.0.1:1080#frag":                          "socks5://u:xxxxx@127.0.0.1:1080",
		"http://127.0.0.1:3128?":                                    "http://127.0.0.1:3128?xxxxx",
		"::not a url s3cret":                                        "(a URL that does not parse)",
	} {
		assert.Equal(t, want, URL(raw), raw)
	}
}

func TestErrorHidesTheURLsSecretsInEveryQuotedForm(t *testing.T) {
	raw := "http://user:s3cret@127.0.0.1:1/crds.tar.gz?sig=t0ken"
	_, err := http.Get(raw) // nothing listens on port 1: net/http quotes the URL in its error
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "t0ken", "net/http quotes the query")
		got := Error(fmt.Errorf("downloading %s: %w", raw, err), raw)
		assert.NotContains(t, got, "s3cret")
		assert.NotContains(t, got, "t0ken")
		assert.Contains(t, got, "http://user:xxxxx@127.0.0.1:1/crds.tar.gz?xxxxx")
	}
	assert.Equal(t, "", Error(nil, raw))
	assert.Equal(t, "plain", Error(errors.New("plain"), raw))
}

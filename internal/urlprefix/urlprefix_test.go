package urlprefix

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const release = "https://github.com/karmada-io/karmada/releases/download/"

func check(t *testing.T, prefixes []string, raw string) error {
	t.Helper()
	l, err := ParseList(prefixes)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err, raw)
	return l.Check(u)
}

func TestCheckAllows(t *testing.T) {
	for _, c := range []struct{ prefix, url string }{
		{release, release + "v1.19.0/crds.tar.gz"},
		{release, "HTTPS://GitHub.COM/karmada-io/karmada/releases/download/v1.19.0/crds.tar.gz"}, // scheme and host in any case
		{release, "https://github.com:443/karmada-io/karmada/releases/download/v1.19.0/crds.tar.gz"},
		{release, "https://github.com:0443/karmada-io/karmada/releases/download/v1.19.0/crds.tar.gz"},
		{release, release + "v1.19.0/crds.tar.gz?X-Amz-Signature=x#frag"}, // query and fragment are the server's business
		{release, "https://user:pass@github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz"},
		{release, release + "v1.19.0/crds%2Etar.gz"}, // an encoded dot that is no segment of its own
		{"http://127.0.0.1:8080/crds", "http://127.0.0.1:8080/crds"},
		{"http://127.0.0.1:8080/crds", "http://127.0.0.1:8080/crds/v1/crds.tar.gz"},
		{"http://mirror.local", "http://mirror.local/anything/at/all"},
		{"http://mirror.local/", "http://mirror.local:80"},
		{"https://[::1]:8443/crds/", "https://[::1]:8443/crds/v1/crds.tar.gz"},
		{"http://proxy.local:3128", "http://user:p4ss@proxy.local:3128"}, // a proxy with credentials
	} {
		assert.NoError(t, check(t, []string{c.prefix}, c.url), "%s under %s", c.url, c.prefix)
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct{ prefix, url, why string }{
		// A host that starts like the allowed one, or names it where the host is not.
		{release, "https://github.com.evil.example/karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{release, "https://github.com@evil.example/karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{release, "https://evil.example/github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{release, "https://github.com./karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{"https://github.com", "https://github.comx/", "not allowed"},
		// Another scheme or port.
		{release, "http://github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{release, "https://github.com:8443/karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/crds.tar.gz", "not allowed"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1/crds.tar.gz", "not allowed"},
		{"http://127.0.0.1:8080/", "http://localhost:8080/crds.tar.gz", "not allowed"},
		{"http://127.0.0.1:8080/", "http://127.1:8080/crds.tar.gz", "not allowed"},
		{"http://mirror.local/", "http://mirror.local:99999/crds.tar.gz", "invalid port"},
		// A path prefix is a whole segment.
		{release, "https://github.com/karmada-io/karmada/releases/downloads/v1/crds.tar.gz", "not allowed"},
		{release, "https://github.com/karmada-io/karmada/releases/download", "not allowed"},
		{"http://127.0.0.1:8080/crds", "http://127.0.0.1:8080/crds-old/crds.tar.gz", "not allowed"},
		{release, "https://github.com/Karmada-io/karmada/releases/download/v1/crds.tar.gz", "not allowed"},
		// A path a server resolves out of the prefix.
		{release, release + "../../../../evil/evil/releases/download/v1/crds.tar.gz", `".." segment`},
		{release, release + "%2e%2e/%2E%2E/x", `".." segment`},
		{release, release + "..;/..;/x", `".." segment`},
		{release, release + "./crds.tar.gz", `"." segment`},
		{release, release + "v1%2f..%2f..%2fx", "encoded slash"},
		{release, release + `v1\..\..\x`, `"\"`},
		{release, release + "%252e%252e/x", "doubly encoded"},
		// Not an http(s) URL with a host.
		{"http://mirror.local/", "ftp://mirror.local/crds.tar.gz", "not an http or https URL"},
		{"http://mirror.local/", "http:mirror.local/crds.tar.gz", "no host"},
		{"http://mirror.local/", "http://:80/crds.tar.gz", "no host"},
		{"http://mirror.local/", "/crds.tar.gz", "not an http or https URL"},
	} {
		err := check(t, []string{c.prefix}, c.url)
		if assert.Error(t, err, "%s under %s", c.url, c.prefix) {
			assert.Contains(t, err.Error(), c.why, c.url)
		}
	}
	assert.ErrorIs(t, check(t, []string{}, release+"v1/crds.tar.gz"), ErrNotListed, "an empty list allows nothing")
	assert.NoError(t, check(t, []string{"http://mirror.local/", release}, release+"v1/crds.tar.gz"), "any prefix of the list")
}

func TestParseRefuses(t *testing.T) {
	for raw, why := range map[string]string{
		"github.com/karmada-io/":                 "not an http or https URL",
		"ftp://mirror.local/":                    "not an http or https URL",
		"https://":                               "no host",
		"https://user:pass@mirror.local/":        "user information",
		"https://mirror.local/?sig=x":            "query",
		"https://mirror.local/#x":                "fragment",
		"https://mirror.local/crds/../":          `".." segment`,
		"https://mirror.local:70000/":            "invalid port",
		"::":                                     "does not parse",
		"https://mirror.local/a%2fb/":            "encoded slash",
		"https://github.com.evil.example:443/x/": "", // parses: the list decides what it allows
	} {
		_, err := Parse(raw)
		if why == "" {
			assert.NoError(t, err, raw)
			continue
		}
		if assert.Error(t, err, raw) {
			assert.Contains(t, err.Error(), why, raw)
		}
	}
	_, err := ParseList([]string{"ftp://a/", "https://ok/", "https://b/?q"})
	assert.ErrorContains(t, err, "ftp://a/")
	assert.ErrorContains(t, err, "https://b/?q")
}

func TestListString(t *testing.T) {
	l, err := ParseList([]string{release, "http://127.0.0.1:8080/crds"})
	require.NoError(t, err)
	assert.Equal(t, release+", http://127.0.0.1:8080/crds", l.String())
	assert.Equal(t, "none", List{}.String())
}

// FuzzCheck: whatever the prefix and the URL, an allowed URL has the prefix's scheme and host
// (in any case), its path lies under the prefix's path on a segment boundary, and none of its
// segments is "." or "..".
func FuzzCheck(f *testing.F) {
	f.Add(release, release+"v1.19.0/crds.tar.gz")
	f.Add(release, "https://github.com.evil.example/karmada-io/karmada/releases/download/x")
	f.Add("http://127.0.0.1:8080/crds", "http://127.0.0.1:8080/crds/../x")
	f.Add("http://[::1]:80", "http://[::1]/a%2fb")
	f.Fuzz(func(t *testing.T, prefix, raw string) {
		p, err := Parse(prefix)
		if err != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || (List{p}).Check(u) != nil {
			return
		}
		pu, _ := url.Parse(prefix)
		if u.Scheme != pu.Scheme || !strings.EqualFold(u.Hostname(), pu.Hostname()) {
			t.Fatalf("%q allowed under %q: another scheme or host", raw, prefix)
		}
		if dir := strings.TrimSuffix(pu.Path, "/"); dir != "" && u.Path != dir && !strings.HasPrefix(u.Path, dir+"/") {
			t.Fatalf("%q allowed under %q: its path %q is elsewhere", raw, prefix, u.Path)
		}
		for _, segment := range strings.Split(u.Path, "/") {
			if segment == "." || segment == ".." {
				t.Fatalf("%q allowed under %q with a %q segment", raw, prefix, segment)
			}
		}
	})
}

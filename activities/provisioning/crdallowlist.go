package provisioning

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/redact"
	"github.com/karmadaflow/karmadaflow/internal/urlprefix"
)

// Where a Karmada may make the worker download from. spec.crdTarball is written by whoever may
// write a Karmada, and the worker fetches it from inside the cluster: without a bound, a
// tenant could make it fetch cloud metadata (169.254.169.254) or any in-cluster Service. So
// the tarball's URL, and every redirect on the way to it, must lie under one of the
// operator's URL prefixes; its proxy must be one the operator lists.

// GitHub's release downloads answer with a redirect to one of these (the second since 2025).
const (
	githubReleaseAssets        = "https://objects.githubusercontent.com/github-production-release-asset-2e65be/"
	githubReleaseAssetsSince25 = "https://release-assets.githubusercontent.com/github-production-release-asset/"
)

// DefaultAllowedURLPrefixes is what spec.crdTarball.httpSource.url may name when the operator
// lists nothing: the Karmada releases' downloads (and where GitHub redirects them), and the
// directory of mirror, the worker's own tarball URL (CRDSource.URL), if it has one.
func DefaultAllowedURLPrefixes(mirror string) []string {
	prefixes := []string{urlDirectory(DefaultCRDTarballURL), githubReleaseAssets, githubReleaseAssetsSince25}
	if dir := urlDirectory(mirror); dir != "" && dir != prefixes[0] {
		if _, err := urlprefix.Parse(dir); err == nil {
			prefixes = append(prefixes, dir)
		}
	}
	return prefixes
}

// urlDirectory is a tarball URL template up to the last "/" before the version placeholder,
// without user information or query: "https://mirror/karmada/{{.Version}}/crds.tar.gz" gives
// "https://mirror/karmada/". "" when it has no host there.
func urlDirectory(template string) string {
	before, _, _ := strings.Cut(template, CRDTarballVersion)
	before, _, _ = strings.Cut(before, "?")
	before, _, _ = strings.Cut(before, "#")
	u, err := url.Parse(before)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return ""
	}
	dir := u.Path[:strings.LastIndex(u.Path, "/")+1]
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: dir}).String()
}

// allowedURLs is AllowedURLPrefixes, or the default without them.
func (s *CRDSource) allowedURLs() (urlprefix.List, error) {
	if s.AllowedURLPrefixes == nil {
		return urlprefix.ParseList(DefaultAllowedURLPrefixes(s.URL))
	}
	return urlprefix.ParseList(s.AllowedURLPrefixes)
}

// CheckSpec returns the problems of k's spec.crdTarball that only this worker's allowlists
// find, as "<field>: <problem>", for ValidateKarmada. A URL that Validate already refuses is
// left to it.
func (s *CRDSource) CheckSpec(k *operatorv1alpha1.Karmada) []string {
	t := k.Spec.CRDTarball
	if t == nil || t.HTTPSource == nil {
		return nil
	}
	var problems []string
	if raw := t.HTTPSource.URL; checkURL(raw) == nil {
		if err := s.refuseURL(raw); err != nil {
			problems = append(problems, fmt.Sprintf("spec.crdTarball.httpSource.url: %s %v", redact.URL(raw), err))
		}
	}
	if p := t.HTTPSource.Proxy; p != nil && checkURL(p.ProxyURL) == nil {
		if err := s.refuseProxy(p.ProxyURL); err != nil {
			problems = append(problems, fmt.Sprintf("spec.crdTarball.httpSource.proxy.proxyURL: %s %v", redact.URL(p.ProxyURL), err))
		}
	}
	return problems
}

// refuseURL says why the worker must not fetch raw, a URL a Karmada led it to (its tarball,
// or a redirect on the way), unless it lies under AllowedURLPrefixes.
func (s *CRDSource) refuseURL(raw string) error {
	allowed, err := s.allowedURLs()
	if err != nil {
		return fmt.Errorf("cannot be checked: the worker's --crd-tarball-allowed-url-prefixes: %w", err)
	}
	return refuse(allowed, raw, "--crd-tarball-allowed-url-prefixes")
}

// refuseProxy says why the worker must not download through raw, a proxy a Karmada names,
// unless AllowedProxyURLs lists its scheme, host and port. A proxy gets a list of its own
// rather than sharing the tarball prefixes: the worker sends it requests for any host, so it
// is trusted with where the worker connects, not with what a tarball holds, and a tarball
// mirror is seldom a proxy. None is listed by default: the worker's own proxy is its
// HTTPS_PROXY environment, which the downloads use already; a Karmada's proxy would only take
// them elsewhere.
func (s *CRDSource) refuseProxy(raw string) error {
	allowed, err := urlprefix.ParseList(s.AllowedProxyURLs)
	if err != nil {
		return fmt.Errorf("cannot be checked: the worker's --crd-tarball-allowed-proxy-urls: %w", err)
	}
	return refuse(allowed, raw, "--crd-tarball-allowed-proxy-urls")
}

func refuse(allowed urlprefix.List, raw, flag string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("does not parse as a URL")
	}
	if err := allowed.Check(u); err != nil {
		return fmt.Errorf("%w (the worker's %s: %s)", err, flag, allowed)
	}
	return nil
}

// redirectRefused is the error of a redirect that left the allowed URLs. It names where the
// redirect led without its secrets (a redirect to a presigned URL carries its signature),
// where net/http's error would quote it whole.
type redirectRefused struct {
	to     string
	reason error
}

func (e *redirectRefused) Error() string {
	return fmt.Sprintf("redirected to %s, which %v", redact.URL(e.to), e.reason)
}

// refuseRedirect is the DownloadAuth.Redirect of a spec.crdTarball download: a redirect must
// lead under the allowed prefixes, as the URL itself.
func (s *CRDSource) refuseRedirect(to *url.URL) error {
	if err := s.refuseURL(to.String()); err != nil {
		return &redirectRefused{to: to.String(), reason: err}
	}
	return nil
}

package provisioning

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/lru"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/redact"
)

// DefaultCRDTarballURL is where karmada-operator downloads a Karmada version's CRDs when the
// Karmada names no tarball (operator/pkg/init.go): the release's crds.tar.gz.
const DefaultCRDTarballURL = "https://github.com/karmada-io/karmada/releases/download/" + CRDTarballVersion + "/crds.tar.gz"

// CRDTarballVersion stands for the instance's Karmada version in a CRD tarball URL.
const CRDTarballVersion = "{{.Version}}"

// TokenSecretKey is the key of the bearer token in CRDSource.TokenSecret.
const TokenSecretKey = "token"

// crdCacheSize bounds the tarballs kept between installs: one per Karmada version (or
// spec.crdTarball URL) in use, and each at most maxTarballContent.
const crdCacheSize = 4

// crdDownloadTimeout bounds one download.
const crdDownloadTimeout = 2 * time.Minute

// CRDSource is where control planes get their CRDs when the Karmada names no tarball, and the
// tarballs downloaded so far. The zero value downloads Karmada's release tarballs.
type CRDSource struct {
	// URL is the tarball of a Karmada version, CRDTarballVersion standing for the version (the
	// image tag of karmada-controller-manager); empty means DefaultCRDTarballURL.
	URL string
	// CAFile is a PEM bundle that alone verifies URL's server; empty means the system's roots.
	CAFile string
	// TokenSecret ("<namespace>/<name>") is a Secret of the host cluster whose key "token" is
	// sent to URL as a bearer token. It is read when a download needs it and goes nowhere
	// else: not to spec.crdTarball URLs (any tenant names those), not into workflow history.
	TokenSecret string
	// AllowedURLPrefixes are the only URLs a spec.crdTarball URL, and the redirects on the way
	// to its tarball, may lead to (urlprefix.Parse's prefixes); nil means
	// DefaultAllowedURLPrefixes(URL), empty allows none.
	AllowedURLPrefixes []string
	// AllowedProxyURLs are the proxies (scheme://host[:port]) a spec.crdTarball may name; none
	// by default.
	AllowedProxyURLs []string

	cacheOnce sync.Once
	cache     *lru.Cache // URL -> *CRDTarball
}

// Tarball returns the CRD tarball of k: spec.crdTarball's or, without one, this source's for
// k's Karmada version. With the download policy IfNotPresent (the default, as in
// karmada-operator) a tarball downloaded before from the same URL is reused; Always downloads
// it again. spec.crdTarball is refused (ErrValidation, as ValidateKarmada refuses it first)
// unless CheckSpec allows it, and so is a redirect away from the allowed URLs; this source's
// own URL is the operator's, and its redirects are followed.
func (s *CRDSource) Tarball(ctx context.Context, host kubernetes.Interface, k *operatorv1alpha1.Karmada) (*CRDTarball, error) {
	spec := k.Spec.CRDTarball
	always := spec != nil && spec.CRDDownloadPolicy != nil && *spec.CRDDownloadPolicy == operatorv1alpha1.DownloadAlways
	var src operatorv1alpha1.HTTPSource
	var auth DownloadAuth
	if spec != nil && spec.HTTPSource != nil && spec.HTTPSource.URL != "" {
		if problems := s.CheckSpec(k); len(problems) > 0 {
			return nil, temporal.NewNonRetryableApplicationError(strings.Join(problems, "; "), ErrValidation, nil)
		}
		src = *spec.HTTPSource
		auth.Redirect = s.refuseRedirect
	} else {
		u, err := s.urlFor(k)
		if err != nil {
			return nil, err
		}
		src = operatorv1alpha1.HTTPSource{URL: u}
		if auth, err = s.auth(ctx, host); err != nil {
			return nil, err
		}
	}
	cache := s.tarballs()
	if cached, ok := cache.Get(src.URL); ok && !always {
		return cached.(*CRDTarball), nil
	}
	t, err := DownloadCRDTarball(ctx, src, auth)
	if err != nil {
		return nil, err
	}
	cache.Add(src.URL, t)
	return t, nil
}

func (s *CRDSource) tarballs() *lru.Cache {
	s.cacheOnce.Do(func() { s.cache = lru.New(crdCacheSize) })
	return s.cache
}

// urlFor is this source's tarball URL for k's Karmada version.
func (s *CRDSource) urlFor(k *operatorv1alpha1.Karmada) (string, error) {
	version, _ := Versions(k)
	if version == "" {
		return "", fmt.Errorf("the image of %s has no tag to take the Karmada version from; set spec.crdTarball", ControllerManager.Name)
	}
	template := s.URL
	if template == "" {
		template = DefaultCRDTarballURL
	}
	return strings.ReplaceAll(template, CRDTarballVersion, url.PathEscape(version)), nil
}

// auth reads the CA file and the token Secret, each time, so that rotating them needs no
// restart.
func (s *CRDSource) auth(ctx context.Context, host kubernetes.Interface) (DownloadAuth, error) {
	var auth DownloadAuth
	if s.CAFile != "" {
		pool, err := certutil.NewPool(s.CAFile)
		if err != nil {
			return auth, fmt.Errorf("CA of the CRD tarball URL: %w", err)
		}
		auth.RootCAs = pool
	}
	if s.TokenSecret != "" {
		namespace, name, _ := strings.Cut(s.TokenSecret, "/")
		secret, err := host.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return auth, fmt.Errorf("reading the token of the CRD tarball URL: %w", err)
		}
		if auth.Token = strings.TrimSpace(string(secret.Data[TokenSecretKey])); auth.Token == "" {
			return auth, fmt.Errorf("the Secret %s has no key %q for the CRD tarball URL", s.TokenSecret, TokenSecretKey)
		}
	}
	return auth, nil
}

// DownloadAuth is what a CRD tarball download trusts and presents beyond the defaults.
type DownloadAuth struct {
	RootCAs *x509.CertPool // verify the server against these only; nil: the system's roots
	Token   string         // sent as a bearer token when set
	// Redirect, when set, is asked before each redirect is followed; its error stops the
	// download there.
	Redirect func(to *url.URL) error
}

// maxRedirects is net/http's own bound, kept when DownloadAuth.Redirect replaces its check.
const maxRedirects = 10

// DownloadCRDTarball fetches the CRD tarball of src (through its proxy, if any) and reads it
// with ReadCRDTarball, at most maxTarball bytes of it.
func DownloadCRDTarball(ctx context.Context, src operatorv1alpha1.HTTPSource, auth DownloadAuth) (*CRDTarball, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if src.Proxy != nil && src.Proxy.ProxyURL != "" {
		proxy, err := url.Parse(src.Proxy.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("proxy URL %s: %s", redact.URL(src.Proxy.ProxyURL), redact.Error(err, src.Proxy.ProxyURL))
		}
		transport.Proxy = http.ProxyURL(proxy)
	}
	if auth.RootCAs != nil {
		transport.TLSClientConfig = &tls.Config{RootCAs: auth.RootCAs, MinVersion: tls.VersionTLS12}
	}
	client := &http.Client{Transport: transport, Timeout: crdDownloadTimeout}
	if auth.Redirect != nil {
		client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return auth.Redirect(req.URL)
		}
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, err
	}
	// net/http drops the header when a redirect leaves the host, as GitHub's release
	// downloads do.
	if auth.Token != "" {
		req.Header.Set("Authorization", "Bearer "+auth.Token)
	}
	resp, err := client.Do(req)
	var refused *redirectRefused
	switch {
	case errors.As(err, &refused): // net/http's error quotes the redirect's URL whole
		return nil, fmt.Errorf("downloading CRD tarball %s: %w", redact.URL(src.URL), refused)
	case err != nil:
		return nil, fmt.Errorf("downloading CRD tarball %s: %s", redact.URL(src.URL), redact.Error(err, src.URL))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading CRD tarball %s: %s", redact.URL(src.URL), resp.Status)
	}
	t, err := ReadCRDTarball(&boundedReader{r: resp.Body, limit: maxTarball, what: "CRD tarball " + redact.URL(src.URL)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redact.URL(src.URL), err)
	}
	return t, nil
}

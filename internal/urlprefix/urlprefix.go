// Package urlprefix owns the allowlists of URLs a user may make karmadaflow fetch. A URL is
// allowed when it has the scheme, the host and the port of one of the list's prefixes and its
// path lies under the prefix's path on a segment boundary, compared on parsed URLs: no string
// prefix, so that https://github.com.evil.example/ or https://github.com@evil.example/ never
// passes for https://github.com/.
package urlprefix

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Prefix is one entry of an allowlist: an http or https URL without user information, query
// or fragment.
type Prefix struct {
	raw    string
	scheme string
	host   string // lower case, with its port always written: "github.com:443"
	path   string // decoded; "" or "/" allow every path
}

// Parse reads a prefix such as "https://github.com/karmada-io/karmada/releases/download/".
// A path without a trailing "/" allows itself and what lies below it: "https://mirror/crds"
// allows /crds and /crds/v1.19.0/crds.tar.gz, not /crds-old.
func Parse(raw string) (Prefix, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Prefix{}, fmt.Errorf("%q does not parse as a URL", raw)
	}
	host, err := hostOf(u)
	switch {
	case err != nil:
		return Prefix{}, fmt.Errorf("%q: %w", raw, err)
	case u.User != nil:
		return Prefix{}, fmt.Errorf("%q must not hold user information", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return Prefix{}, fmt.Errorf("%q must have no query or fragment", raw)
	}
	if err := checkPath(u); err != nil {
		return Prefix{}, fmt.Errorf("%q: %w", raw, err)
	}
	return Prefix{raw: raw, scheme: u.Scheme, host: host, path: u.Path}, nil
}

// String is the prefix as written.
func (p Prefix) String() string { return p.raw }

// HasPath reports whether the prefix limits the path, beyond its scheme, host and port.
func (p Prefix) HasPath() bool { return p.path != "" && p.path != "/" }

// under reports whether u (its path checked by checkPath) lies under p.
func (p Prefix) under(u *url.URL, host string) bool {
	if u.Scheme != p.scheme || host != p.host {
		return false
	}
	switch {
	case !p.HasPath():
		return true
	case strings.HasSuffix(p.path, "/"):
		return strings.HasPrefix(u.Path, p.path)
	default:
		return u.Path == p.path || strings.HasPrefix(u.Path, p.path+"/")
	}
}

// List is an allowlist: a URL is allowed when it lies under one of its prefixes. An empty List
// allows nothing.
type List []Prefix

// ParseList parses each prefix of raw.
func ParseList(raw []string) (List, error) {
	l := make(List, 0, len(raw))
	var errs []error
	for _, r := range raw {
		p, err := Parse(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l = append(l, p)
	}
	return l, errors.Join(errs...)
}

// ErrNotListed is Check's answer for a URL under none of the list's prefixes.
var ErrNotListed = errors.New("is not allowed")

// Check returns nil when u lies under one of l's prefixes, and else why not: ErrNotListed, or
// what makes u's host or path unfit for a comparison (a path with "..", which a server would
// resolve out of the prefix, is never allowed).
func (l List) Check(u *url.URL) error {
	host, err := hostOf(u)
	if err != nil {
		return err
	}
	if err := checkPath(u); err != nil {
		return err
	}
	for _, p := range l {
		if p.under(u, host) {
			return nil
		}
	}
	return ErrNotListed
}

// String is the list as written, comma-separated ("none" when empty).
func (l List) String() string {
	if len(l) == 0 {
		return "none"
	}
	raw := make([]string, len(l))
	for i, p := range l {
		raw[i] = p.raw
	}
	return strings.Join(raw, ", ")
}

// hostOf is u's host in the form prefixes compare: lower case, the port written out (80 for
// http, 443 for https when u has none).
func hostOf(u *url.URL) (string, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("is not an http or https URL")
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return "", errors.New("has no host")
	}
	port := u.Port()
	switch {
	case port == "" && u.Scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	default:
		// url.Parse checks only that the port is digits: "0443" dials 443, 99999 nothing.
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return "", fmt.Errorf("has an invalid port %q", port)
		}
		port = strconv.FormatUint(n, 10)
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}

// checkPath refuses a path whose meaning a server may take differently from its decoded
// form's: "." and ".." segments (also spelled %2e, or with ";" parameters, as some servers
// resolve them), encoded slashes (%2f), backslashes, and "%" left after decoding (a doubly
// encoded path).
func checkPath(u *url.URL) error {
	if strings.Contains(strings.ToLower(u.EscapedPath()), "%2f") {
		return errors.New("has an encoded slash in its path")
	}
	if strings.ContainsAny(u.Path, `\%`) {
		return errors.New(`has "\" or a doubly encoded character in its path`)
	}
	for _, segment := range strings.Split(u.Path, "/") {
		if segment, _, _ := strings.Cut(segment, ";"); segment == "." || segment == ".." {
			return fmt.Errorf("has a %q segment in its path", segment)
		}
	}
	return nil
}

// Package redact owns how URLs a user wrote appear in what karmadaflow reports (conditions,
// Events, errors, and so the workflow histories that carry them): without the secrets a URL
// may hold, a password in its user information or a token in its query (a presigned download).
package redact

import (
	"net/url"
	"strings"
)

// URL is raw with the password of its user information and its query replaced by "xxxxx",
// and without its fragment. A string that does not parse as a URL is not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "xxxxx", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.Redacted()
}

// Error is err's message with raw in it replaced by URL(raw), in each form a library may
// quote it: as given, re-encoded (url.URL.String), or with the password hidden but the query
// shown (url.URL.Redacted, and net/http's errors, which show it as ***).
func Error(err error, raw string) string {
	if err == nil {
		return ""
	}
	message, redacted := err.Error(), URL(raw)
	forms := []string{raw}
	if u, err := url.Parse(raw); err == nil {
		forms = append(forms, u.String(), u.Redacted())
		if password, ok := u.User.Password(); ok { // net/http's errors show it as ***
			forms = append(forms, strings.Replace(u.String(), password+"@", "***@", 1))
		}
	}
	for _, form := range forms {
		if form != "" {
			message = strings.ReplaceAll(message, form, redacted)
		}
	}
	return message
}

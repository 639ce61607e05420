package proxy

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Caller is the identity a request is made as, in the control plane and in every member.
type Caller struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

func (c Caller) impersonation() rest.ImpersonationConfig {
	return rest.ImpersonationConfig{UserName: c.Name, UID: c.UID, Groups: c.Groups, Extra: c.Extra}
}

var errUnauthenticated = errors.New("the request carries neither a valid bearer token nor a client certificate")

// identities authenticates callers with TokenReview and authorizes them with
// SubjectAccessReview on the control plane, remembering answers for a short time.
type identities struct {
	client kubernetes.Interface
	ttl    time.Duration

	mu      sync.Mutex
	callers map[[32]byte]cached[Caller]
	allowed map[string]cached[bool]
}

type cached[T any] struct {
	value   T
	expires time.Time
}

func newIdentities(client kubernetes.Interface, ttl time.Duration) *identities {
	return &identities{client: client, ttl: ttl, callers: map[[32]byte]cached[Caller]{}, allowed: map[string]cached[bool]{}}
}

// authenticate returns who sent r: the subject of a verified client certificate, or the
// user a bearer token belongs to.
func (id *identities) authenticate(ctx context.Context, r *http.Request) (Caller, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		return Caller{Name: cert.Subject.CommonName, Groups: append(slices.Clone(cert.Subject.Organization), "system:authenticated")}, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return Caller{}, errUnauthenticated
	}
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	id.mu.Lock()
	if c, ok := id.callers[key]; ok && now.Before(c.expires) {
		id.mu.Unlock()
		return c.value, nil
	}
	id.mu.Unlock()

	review, err := id.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return Caller{}, err
	}
	if !review.Status.Authenticated {
		return Caller{}, errUnauthenticated
	}
	u := review.Status.User
	c := Caller{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		c.Extra = map[string][]string{}
		for k, v := range u.Extra {
			c.Extra[k] = v
		}
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if len(id.callers) > 10000 {
		id.callers = map[[32]byte]cached[Caller]{}
	}
	id.callers[key] = cached[Caller]{value: c, expires: now.Add(id.ttl)}
	return c, nil
}

// authorize asks whether c may use the proxy with verb (proxying/proxy in search.karmada.io).
func (id *identities) authorize(ctx context.Context, c Caller, verb string) (bool, error) {
	key := verb + "\x00" + c.Name + "\x00" + c.UID + "\x00" + strings.Join(c.Groups, ",")
	now := time.Now()
	id.mu.Lock()
	if a, ok := id.allowed[key]; ok && now.Before(a.expires) {
		id.mu.Unlock()
		return a.value, nil
	}
	id.mu.Unlock()

	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range c.Extra {
		extra[k] = v
	}
	review, err := id.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: c.Name, UID: c.UID, Groups: c.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: "search.karmada.io", Version: "v1alpha1", Resource: "proxying", Subresource: "proxy", Name: "karmada", Verb: verb,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if len(id.allowed) > 10000 {
		id.allowed = map[string]cached[bool]{}
	}
	id.allowed[key] = cached[bool]{value: review.Status.Allowed, expires: now.Add(id.ttl)}
	return review.Status.Allowed, nil
}

// verbOf is the authorization verb of an HTTP method.
func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}

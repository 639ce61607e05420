package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
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

// ServiceAccountIdentity is who a caller that is a ServiceAccount of the control plane is in
// member clusters. A ServiceAccount's name (system:serviceaccount:<namespace>:<name>) means a
// ServiceAccount of the cluster that checks it: passed through, the control plane's
// kube-system:foo acts in each member as that member's own kube-system:foo, with whatever
// rights the member gave it.
type ServiceAccountIdentity string

const (
	// ServiceAccountPassthrough: the caller is impersonated as it is, name and groups (the
	// default, as Karmada's proxy does).
	ServiceAccountPassthrough ServiceAccountIdentity = "passthrough"
	// ServiceAccountDeny: ServiceAccount callers are refused (403) any request that reaches
	// a member; the control plane they reach as themselves.
	ServiceAccountDeny ServiceAccountIdentity = "deny"
	// ServiceAccountMap: in members, a ServiceAccount caller is the user
	// MappedServiceAccountPrefix<namespace>:<name>, and no caller has ServiceAccount groups:
	// a member grants it rights by that name, explicitly. The control plane still sees the
	// ServiceAccount itself.
	ServiceAccountMap ServiceAccountIdentity = "map"
)

// ServiceAccountIdentities are the values of ServiceAccountIdentity.
var ServiceAccountIdentities = []ServiceAccountIdentity{ServiceAccountPassthrough, ServiceAccountDeny, ServiceAccountMap}

// MappedServiceAccountPrefix begins the user name a ServiceAccount caller has in members with
// ServiceAccountMap.
const MappedServiceAccountPrefix = "karmadaflow:serviceaccount:"

// isServiceAccount tells whether c is a ServiceAccount of the control plane.
func (c Caller) isServiceAccount() bool {
	_, _, err := serviceaccount.SplitUsername(c.Name)
	return err == nil
}

// inMembers is who c is in member clusters under policy (ServiceAccountDeny callers never get
// this far).
func (c Caller) inMembers(policy ServiceAccountIdentity) Caller {
	if policy != ServiceAccountMap {
		return c
	}
	if namespace, name, err := serviceaccount.SplitUsername(c.Name); err == nil {
		c.Name = MappedServiceAccountPrefix + namespace + ":" + name
	}
	c.Groups = slices.DeleteFunc(slices.Clone(c.Groups), func(g string) bool {
		return g == serviceaccount.AllServiceAccountsGroup || strings.HasPrefix(g, serviceaccount.ServiceAccountGroupPrefix)
	})
	return c
}

var errUnauthenticated = errors.New("the request carries neither a valid bearer token nor a client certificate")

// errTooManyReviews is the answer to a caller who would need a review while MaxInFlight
// reviews of its kind are in flight already.
var errTooManyReviews = errors.New("too many callers are being reviewed by the control plane; retry later")

// ReviewOptions bound the TokenReviews and SubjectAccessReviews the proxy asks the control
// plane for. A zero field takes its default.
type ReviewOptions struct {
	// CacheTTL is how long a token's user, and a SubjectAccessReview that allowed, are
	// remembered (default 10s).
	CacheTTL time.Duration
	// FailureCacheTTL is how long a token the control plane did not authenticate, and a
	// SubjectAccessReview that denied, are remembered (default 10s, as kube-apiserver's
	// webhook token authenticator remembers failures). Errors are never remembered.
	FailureCacheTTL time.Duration
	// MaxInFlight bounds the TokenReviews in flight, and apart from them the
	// SubjectAccessReviews (default 8). Tokens the control plane authenticated within the last
	// hour have as many TokenReview slots of their own, so that a flood of unknown tokens does
	// not lock out a known caller whose answer expired. A caller who would need one more is
	// answered 429 with
	// Retry-After at once; callers whose answers are remembered never wait for it.
	MaxInFlight int
	// SourceQPS and SourceBurst bound, per source address, the requests whose token the proxy
	// does not know good (one the control plane authenticated within the last hour): beyond
	// them such a request is answered 429 with Retry-After before any review (defaults 10 and
	// 20). A flood of random tokens from one address then spends that address's budget, not
	// the review slots a new caller elsewhere needs; known tokens and client certificates are
	// never counted.
	SourceQPS   float64
	SourceBurst int
}

// Default review options.
const (
	DefaultReviewCacheTTL        = 10 * time.Second
	DefaultReviewFailureCacheTTL = 10 * time.Second
	DefaultReviewMaxInFlight     = 8
	// A new caller needs one request with an unknown token (kubectl's discovery and the rest
	// follow with the token known); 10 a second and 20 at once leave a source's callers, even
	// many behind one NAT, room to start, while a flood from it costs at most 10 reviews a
	// second.
	DefaultReviewSourceQPS   = 10
	DefaultReviewSourceBurst = 20
)

func (o ReviewOptions) withDefaults() ReviewOptions {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultReviewCacheTTL
	}
	if o.FailureCacheTTL <= 0 {
		o.FailureCacheTTL = DefaultReviewFailureCacheTTL
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultReviewMaxInFlight
	}
	if o.SourceQPS <= 0 {
		o.SourceQPS = DefaultReviewSourceQPS
	}
	if o.SourceBurst <= 0 {
		o.SourceBurst = DefaultReviewSourceBurst
	}
	return o
}

// reviewTimeout bounds one review: it is shared by every caller waiting for the same answer,
// so it does not end with the request that started it.
const reviewTimeout = 30 * time.Second

// identities authenticates callers with TokenReview and authorizes them with
// SubjectAccessReview on the control plane. Answers are remembered (k8s.io/apiserver's cached
// token authenticator for tokens, keyed by an HMAC of the token; an LRU cache for access),
// concurrent callers waiting for the same answer share one review, and at most MaxInFlight
// reviews of each kind are in flight. Before a token the proxy does not know good is looked
// at, its source spends one request of its budget (sources).
type identities struct {
	client kubernetes.Interface
	opts   ReviewOptions

	tokens   authenticator.Token
	reviewer *tokenReviewer
	sources  *sourceLimiter

	accessSlots *semaphore.Weighted
	allowed     *utilcache.LRUExpireCache
	accessGroup singleflight.Group
}

// maxCachedAccess bounds the SubjectAccessReview answers remembered.
const maxCachedAccess = 10000

func newIdentities(client kubernetes.Interface, opts ReviewOptions) *identities {
	opts = opts.withDefaults()
	reviewer := newTokenReviewer(client, opts.MaxInFlight)
	return &identities{
		client: client, opts: opts,
		// Errors (the control plane unreachable, too many reviews in flight) are not cached.
		tokens:      tokencache.New(reviewer, false, opts.CacheTTL, opts.FailureCacheTTL),
		reviewer:    reviewer,
		sources:     newSourceLimiter(opts.SourceQPS, opts.SourceBurst, max(opts.CacheTTL, opts.FailureCacheTTL)),
		accessSlots: semaphore.NewWeighted(int64(opts.MaxInFlight)),
		allowed:     utilcache.NewLRUExpireCache(maxCachedAccess),
	}
}

// authenticate returns who sent r: the subject of a verified client certificate, or the
// user a bearer token belongs to. The error is errUnauthenticated, errTooManyReviews,
// errTooManyFromSource, or the TokenReview's failure.
func (id *identities) authenticate(ctx context.Context, r *http.Request) (Caller, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		return Caller{Name: cert.Subject.CommonName, Groups: append(slices.Clone(cert.Subject.Organization), "system:authenticated")}, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return Caller{}, errUnauthenticated
	}
	if key := id.reviewer.keyOf(token); !id.reviewer.isKnownKey(key) && !id.sources.allowToken(sourceOf(r), key) {
		return Caller{}, errTooManyFromSource
	}
	resp, ok, err := id.tokens.AuthenticateToken(ctx, token)
	if err != nil {
		return Caller{}, err
	}
	if !ok || resp == nil || resp.User == nil {
		return Caller{}, errUnauthenticated
	}
	u := resp.User
	c := Caller{Name: u.GetName(), UID: u.GetUID(), Groups: slices.Clone(u.GetGroups())}
	if extra := u.GetExtra(); len(extra) > 0 {
		c.Extra = map[string][]string{}
		for k, v := range extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	return c, nil
}

// tokenReviewer is the authenticator.Token the cache asks on a miss: one TokenReview, when
// fewer than its slots are in flight, or, for a token authenticated within knownFor, fewer
// than the slots kept for such tokens. A token the control plane does not authenticate is a
// failure (cached), not an error (not cached), whatever the review's status.error says.
type tokenReviewer struct {
	client     kubernetes.Interface
	slots      *semaphore.Weighted
	knownSlots *semaphore.Weighted
	// known are the tokens authenticated within knownFor, by HMAC under hashKey.
	known   *utilcache.LRUExpireCache
	hashKey []byte
}

// knownFor is how long a token the control plane authenticated keeps the slots kept for known
// tokens; maxKnownTokens bounds how many are remembered.
const (
	knownFor       = time.Hour
	maxKnownTokens = 10000
)

func newTokenReviewer(client kubernetes.Interface, maxInFlight int) *tokenReviewer {
	return &tokenReviewer{
		client:     client,
		slots:      semaphore.NewWeighted(int64(maxInFlight)),
		knownSlots: semaphore.NewWeighted(int64(maxInFlight)),
		known:      utilcache.NewLRUExpireCache(maxKnownTokens),
		hashKey:    []byte(rand.Text()),
	}
}

// keyOf is what known remembers of token: never the token itself.
func (t *tokenReviewer) keyOf(token string) string {
	mac := hmac.New(sha256.New, t.hashKey)
	mac.Write([]byte(token))
	return string(mac.Sum(nil))
}

// isKnown tells whether the control plane authenticated token within knownFor.
func (t *tokenReviewer) isKnown(token string) bool { return t.isKnownKey(t.keyOf(token)) }

// isKnownKey is isKnown of the token whose key is key.
func (t *tokenReviewer) isKnownKey(key string) bool {
	_, known := t.known.Get(key)
	return known
}

// acquire takes a review slot for token: a free one, else, for a known token, one of those
// kept for known tokens. release gives it back.
func (t *tokenReviewer) acquire(token string) (release func(), ok bool) {
	if t.slots.TryAcquire(1) {
		return func() { t.slots.Release(1) }, true
	}
	if t.isKnown(token) && t.knownSlots.TryAcquire(1) {
		return func() { t.knownSlots.Release(1) }, true
	}
	return nil, false
}

func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	release, ok := t.acquire(token)
	if !ok {
		return nil, false, errTooManyReviews
	}
	defer release()
	review, err := t.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("reviewing the token: %w", err)
	}
	if !review.Status.Authenticated {
		t.known.Remove(t.keyOf(token))
		return nil, false, nil
	}
	t.known.Add(t.keyOf(token), true, knownFor)
	u := review.Status.User
	info := &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string][]string{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return &authenticator.Response{User: info}, true, nil
}

// authorize asks whether c may use the proxy with verb (proxying/proxy in search.karmada.io).
func (id *identities) authorize(ctx context.Context, c Caller, verb string) (bool, error) {
	key := accessKey(c, verb)
	if allowed, ok := id.allowed.Get(key); ok {
		return allowed.(bool), nil
	}
	answer := id.accessGroup.DoChan(key, func() (any, error) {
		if allowed, ok := id.allowed.Get(key); ok { // raced with a review that just ended
			return allowed.(bool), nil
		}
		if !id.accessSlots.TryAcquire(1) {
			return false, errTooManyReviews
		}
		defer id.accessSlots.Release(1)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		allowed, err := id.review(ctx, c, verb)
		if err != nil {
			return false, err
		}
		ttl := id.opts.CacheTTL
		if !allowed {
			ttl = id.opts.FailureCacheTTL
		}
		id.allowed.Add(key, allowed, ttl)
		return allowed, nil
	})
	select {
	case a := <-answer:
		if a.Err != nil {
			return false, a.Err
		}
		return a.Val.(bool), nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// review asks the control plane whether c may use the proxy with verb.
func (id *identities) review(ctx context.Context, c Caller, verb string) (bool, error) {
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
	return review.Status.Allowed, nil
}

// accessKey identifies a SubjectAccessReview: the verb and everything of the caller it is
// asked about, each part length-prefixed so that no two callers share a key.
func accessKey(c Caller, verb string) string {
	var b strings.Builder
	part := func(s string) { fmt.Fprintf(&b, "%d:%s", len(s), s) }
	part(verb)
	part(c.Name)
	part(c.UID)
	fmt.Fprintf(&b, "%d", len(c.Groups))
	for _, g := range c.Groups {
		part(g)
	}
	keys := slices.Sorted(maps.Keys(c.Extra))
	fmt.Fprintf(&b, "%d", len(keys))
	for _, k := range keys {
		part(k)
		fmt.Fprintf(&b, "%d", len(c.Extra[k]))
		for _, v := range c.Extra[k] {
			part(v)
		}
	}
	return b.String()
}

// writeTooManyReviews answers errTooManyReviews or errTooManyFromSource (err) as an API server
// at its limit of requests in flight does: 429 TooManyRequests with Retry-After.
func writeTooManyReviews(w http.ResponseWriter, err error) {
	(&refusal{apierrors.NewTooManyRequests(err.Error(), retryAfterSeconds)}).write(w)
}

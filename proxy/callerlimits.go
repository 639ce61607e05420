package proxy

import (
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Each caller's share of the proxy: its requests in flight, long-running and others apart, and
// the bytes its requests hold at once, so that no caller takes all of the proxy's slots or
// budget. A caller is known once authenticated: its share is taken in route, after the
// review (whose answers are remembered), and given back when the request ends.

// callerSlots bound the requests of one kind each caller has in flight. The zero value is
// ready; max is read when a slot is taken.
type callerSlots struct {
	mu    sync.Mutex
	taken map[string]int // by user name; a caller without requests has no entry
}

func (c *callerSlots) take(name string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken[name] >= max {
		return false
	}
	if c.taken == nil {
		c.taken = map[string]int{}
	}
	c.taken[name]++
	return true
}

func (c *callerSlots) give(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken[name]--; c.taken[name] <= 0 {
		delete(c.taken, name)
	}
}

// inFlight is the number of requests name has in flight.
func (c *callerSlots) inFlight(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken[name]
}

// callerBudgets are the budgets of bytes of the callers with requests in flight. The zero
// value is ready.
type callerBudgets struct {
	mu     sync.Mutex
	byName map[string]*callerBudget
}

// callerBudget is one caller's budget, shared by its requests in flight (users).
type callerBudget struct {
	budget
	users int
}

// join returns name's budget of max bytes, for one more request; leave must follow.
func (c *callerBudgets) join(name string, max int64) *budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byName == nil {
		c.byName = map[string]*callerBudget{}
	}
	b := c.byName[name]
	if b == nil {
		b = &callerBudget{budget: budget{max: max}}
		c.byName[name] = b
	}
	b.users++
	return &b.budget
}

// leave ends one request's use of name's budget; the last one forgets it.
func (c *callerBudgets) leave(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.byName[name]; b != nil {
		if b.users--; b.users <= 0 {
			delete(c.byName, name)
		}
	}
}

// takeCallerShare takes one of the caller's slots of the request's kind (h.longRunning) and
// makes the request's hold take its bytes from the caller's budget too; when the caller has no
// slot left it answers 429 with Retry-After and returns false. release gives it all back.
func (s *Server) takeCallerShare(w http.ResponseWriter, h *hold, caller Caller) (release func(), ok bool) {
	slots, max, flag := &s.callerRequests, s.limits.MaxRequestsPerCaller, "--proxy-max-requests-per-caller"
	kind := "requests (other than watches, logs, exec, attach and port-forward)"
	if h.longRunning {
		slots, max, flag = &s.callerSlots, s.limits.MaxLongRunningRequestsPerCaller, "--proxy-max-long-running-requests-per-caller"
		kind = "long-running requests (watches, logs, exec, attach, port-forward)"
	}
	if !slots.take(caller.Name, max) {
		(&refusal{apierrors.NewTooManyRequests(fmt.Sprintf(
			"user %q has as many %s in flight as one caller may, %d (the proxy's %s); close some or try again later",
			caller.Name, kind, max, flag), retryAfterSeconds)}).write(w)
		return nil, false
	}
	h.joinCaller(caller.Name, s.callerBytes.join(caller.Name, s.limits.MaxBufferedBytesPerCaller))
	return func() {
		h.release()
		s.callerBytes.leave(caller.Name)
		slots.give(caller.Name)
	}, true
}

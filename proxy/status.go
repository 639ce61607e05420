package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers with a Kubernetes Status, as an API server would.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeStatusObject(w, metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message})
}

// writeStatusObject answers with status, with the HTTP status of its code.
func writeStatusObject(w http.ResponseWriter, status metav1.Status) {
	status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(status)
}

// warn adds a Warning header (RFC 7234 form, as Kubernetes sends them); kubectl prints it.
func warn(h http.Header, message string) {
	h.Add("Warning", "299 - "+strconv.Quote(message))
}

// memberError is a member's answer other than success, or a failure to reach it.
type memberError struct {
	cluster string
	code    int    // HTTP status; 0 when the member could not be reached
	body    []byte // the member's Status, when it sent one
	err     error
	// refusal is set when the proxy will not use the member's answer (too large, or beyond
	// the memory the proxy may hold at once): the whole request fails with it.
	refusal *refusal
}

func (e *memberError) Error() string {
	if e.refusal != nil {
		return e.refusal.status.ErrStatus.Message
	}
	if e.err != nil {
		return "cluster " + e.cluster + " is unreachable: " + e.err.Error()
	}
	var s metav1.Status
	if json.Unmarshal(e.body, &s) == nil && s.Message != "" {
		return "cluster " + e.cluster + ": " + s.Message
	}
	return "cluster " + e.cluster + " answered " + strconv.Itoa(e.code)
}

// write answers with the member's own Status, the proxy's refusal, or 503 for an unreachable
// member.
func (e *memberError) write(w http.ResponseWriter) {
	if e.refusal != nil {
		e.refusal.write(w)
		return
	}
	if e.code == 0 {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, e.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.code)
	_, _ = w.Write(e.body)
}

// firstRefusal returns the first of errs that is a refusal of the whole request, nil if none is.
func firstRefusal(errs ...*memberError) *memberError {
	for _, e := range errs {
		if e != nil && e.refusal != nil {
			return e
		}
	}
	return nil
}

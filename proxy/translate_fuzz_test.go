package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzTranslateBody: any PUT body is refused or becomes a JSON object whose Content-Length is
// its length, with every field but metadata as it was, and in metadata the cluster's own
// resourceVersion (when the multi-cluster one names the cluster) and no cached-from
// annotation, the rest of metadata as it was.
func FuzzTranslateBody(f *testing.F) {
	rv := EncodeResourceVersion(map[string]string{"m1": "11", "m2": "22"})
	for _, seed := range []string{
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","resourceVersion":"` + rv + `","annotations":{"keep":"<me>","` + AnnotationCachedFrom + `":"m2"}},"spec":{"z":1.50,"a":[1,{"b":null}]}}`,
		`{"metadata":{"resourceVersion":"12"}}`,
		`{"metadata":null,"x":"\u2028"}`,
		`{"metadata":{"annotations":null,"resourceVersion":5}}`,
		`{"metadata":[1],"metadata":{"annotations":{"a":"b","a":"c"}}}`,
		`{"a":1} {"b":2}`,
		`[1,2]`,
	} {
		f.Add([]byte(seed), "m2")
	}
	f.Fuzz(func(t *testing.T, body []byte, cluster string) {
		r := newRequest(http.MethodPut, "/api/v1/namespaces/default/pods/web", strings.NewReader(string(body)))
		if err := translateBody(r, cluster, &hold{budget: &budget{max: 1 << 20}}); err != nil {
			return
		}
		out, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if r.ContentLength != int64(len(out)) || r.Header.Get("Content-Length") != strconv.Itoa(len(out)) {
			t.Fatalf("Content-Length %d (header %q) of a body of %d", r.ContentLength, r.Header.Get("Content-Length"), len(out))
		}
		got, err := decodeObject(out)
		if err != nil || got == nil {
			t.Fatalf("%q became %q, not a JSON object: %v", body, out, err)
		}
		in, err := decodeObject(body)
		if err != nil || in == nil {
			t.Fatalf("%q, not a JSON object, was accepted: %v", body, err)
		}
		want := in
		if md, ok := in["metadata"].(map[string]any); ok {
			if s, ok := md["resourceVersion"].(string); ok && s != "" {
				if versions, err := DecodeResourceVersion(s); err == nil && versions[cluster] != "" {
					md["resourceVersion"] = versions[cluster]
				}
			}
			if annotations, ok := md["annotations"].(map[string]any); ok {
				delete(annotations, AnnotationCachedFrom)
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q for cluster %q became %q", body, cluster, out)
		}
	})
}

// decodeObject decodes a JSON object with its numbers as written (json.Number): any number
// is valid JSON, also one beyond float64.
func decodeObject(data []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var obj map[string]any
	err := d.Decode(&obj)
	return obj, err
}

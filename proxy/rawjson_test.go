package proxy

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithAnnotation(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"no metadata":          {`{"kind":"Pod"}`, `{"metadata":{"annotations":{"k":"c1"}},"kind":"Pod"}`},
		"empty object":         {`{}`, `{"metadata":{"annotations":{"k":"c1"}}}`},
		"null metadata":        {`{"metadata":null}`, `{"metadata":{"annotations":{"k":"c1"}}}`},
		"no annotations":       {`{"metadata":{"name":"a"},"spec":{}}`, `{"metadata":{"annotations":{"k":"c1"},"name":"a"},"spec":{}}`},
		"null annotations":     {`{"metadata":{"annotations":null}}`, `{"metadata":{"annotations":{"k":"c1"}}}`},
		"other annotations":    {`{"metadata":{"annotations":{"a":"b"}}}`, `{"metadata":{"annotations":{"k":"c1","a":"b"}}}`},
		"annotation replaced":  {`{"metadata":{"annotations":{"a":"b","k":"old"}}}`, `{"metadata":{"annotations":{"a":"b","k":"c1"}}}`},
		"spaces and escapes":   {" { \"metadata\" : { \"na\\u006de\" : \"x\\\"}\" } , \"n\" : -1.5e3 } ", ` { "metadata" : {"annotations":{"k":"c1"}, "na\u006de" : "x\"}" } , "n" : -1.5e3 } `},
		"escaped metadata key": {`{"m\u0065tadata":{}}`, `{"m\u0065tadata":{"annotations":{"k":"c1"}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := withAnnotation([]byte(tc.in), "k", "c1")
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestWithResourceVersionAndReads(t *testing.T) {
	got, err := withResourceVersion([]byte(`{"metadata":{"resourceVersion":"12","name":"a"}}`), "e30")
	require.NoError(t, err)
	assert.Equal(t, `{"metadata":{"resourceVersion":"e30","name":"a"}}`, string(got))
	assert.Equal(t, "e30", resourceVersionIn(got))
	assert.Equal(t, "tok", continueIn([]byte(`{"metadata":{"continue":"tok"},"items":[]}`)))
	assert.Empty(t, continueIn([]byte(`{"items":[]}`)))
}

func TestArrayElements(t *testing.T) {
	items, err := arrayElements([]byte(` [ {"a":[1,{"b":"]"}]} , "s" ,3, null,true ] `))
	require.NoError(t, err)
	want := []string{`{"a":[1,{"b":"]"}]}`, `"s"`, `3`, `null`, `true`}
	require.Len(t, items, len(want))
	for i := range want {
		assert.Equal(t, want[i], string(items[i]))
	}
	items, err = arrayElements([]byte(`null`))
	require.NoError(t, err)
	assert.Empty(t, items)
	for _, bad := range []string{``, `[`, `[1,`, `[1 2]`, `{"a":1}`, `["unterminated]`, `[1]x`, `[tru]`} {
		_, err := arrayElements([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestObjectFieldsRefuses(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{a:1}`, `{"a":1}}`} {
		_, err := objectFields([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// FuzzWithAnnotation: for any JSON object, the annotation is set, the result is valid JSON
// and nothing else changes.
func FuzzWithAnnotation(f *testing.F) {
	for _, seed := range []string{`{}`, `{"metadata":{"annotations":{"a":"b"}}}`, `{"metadata":null,"x":[1,"}"]}`, `{"kind":"Pod","metadata":{"name":"p"}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var before map[string]any
		if json.Unmarshal(in, &before) != nil || before == nil {
			_, _ = withAnnotation(in, "k", "v") // must not panic
			return
		}
		md, isObject := before["metadata"].(map[string]any)
		if before["metadata"] != nil && !isObject {
			return // a metadata that is not an object is not an object's metadata
		}
		if md != nil && md["annotations"] != nil {
			if _, ok := md["annotations"].(map[string]any); !ok {
				return
			}
		}
		out, err := withAnnotation(in, "k", "v")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q became invalid JSON %q: %v", in, out, err)
		}
		annotations := after["metadata"].(map[string]any)["annotations"].(map[string]any)
		if annotations["k"] != "v" {
			t.Fatalf("%q: annotation missing in %q", in, out)
		}
		delete(annotations, "k")
		if len(annotations) == 0 && (md == nil || md["annotations"] == nil) {
			delete(after["metadata"].(map[string]any), "annotations")
		}
		if len(after["metadata"].(map[string]any)) == 0 && md == nil {
			if _, had := before["metadata"]; !had {
				delete(after, "metadata")
			} else {
				after["metadata"] = nil
			}
		}
		a, _ := json.Marshal(before)
		b, _ := json.Marshal(after)
		if string(a) != string(b) {
			t.Fatalf("%q: other content changed: %s != %s", in, a, b)
		}
	})
}

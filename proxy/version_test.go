package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResourceVersionEncodingOfTheSpec(t *testing.T) {
	encoded := EncodeResourceVersion(map[string]string{"cluster2": "5678", "cluster1": "1234"})
	assert.Equal(t, "eyJjbHVzdGVyMSI6IjEyMzQiLCJjbHVzdGVyMiI6IjU2NzgifQ", encoded)
	decoded, err := DecodeResourceVersion(encoded)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"cluster1": "1234", "cluster2": "5678"}, decoded)
}

func TestDecodeResourceVersionRefuses(t *testing.T) {
	for _, rv := range []string{"12345", "!!", "bnVsbA", "e30x", EncodeResourceVersion(map[string]string{"": "1"}), EncodeResourceVersion(map[string]string{"a": ""})} {
		_, err := DecodeResourceVersion(rv)
		assert.Error(t, err, rv)
	}
	versions, err := requestedVersions("0")
	assert.NoError(t, err)
	assert.Nil(t, versions)
}

func FuzzDecodeResourceVersion(f *testing.F) {
	f.Add("eyJjbHVzdGVyMSI6IjEyMzQiLCJjbHVzdGVyMiI6IjU2NzgifQ")
	f.Add("12345")
	f.Add("")
	f.Fuzz(func(t *testing.T, rv string) {
		versions, err := DecodeResourceVersion(rv)
		if err != nil {
			return
		}
		again, err := DecodeResourceVersion(EncodeResourceVersion(versions))
		if err != nil {
			t.Fatalf("re-encoding %q: %v", rv, err)
		}
		assert.Equal(t, versions, again)
	})
}

func FuzzContinueToken(f *testing.F) {
	f.Add(encodeContinue(continueToken{Cluster: "m1", Continue: "abc"}))
	f.Add("xyz")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeContinue(s)
		if err != nil {
			return
		}
		if c.Cluster == "" {
			t.Fatalf("%q decoded without a cluster", s)
		}
	})
}

package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// EncodeResourceVersion encodes the resourceVersions of several clusters as one:
// base64.RawURLEncoding of the JSON object {"<cluster>":"<rv>",...} with sorted keys.
func EncodeResourceVersion(versions map[string]string) string {
	data, err := json.Marshal(versions) // encoding/json sorts map keys
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// DecodeResourceVersion reverses EncodeResourceVersion. "" and "0" are not multi-cluster
// versions: callers pass them on unchanged.
func DecodeResourceVersion(s string) (map[string]string, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("resourceVersion %q was not returned by this proxy: %w", s, err)
	}
	var versions map[string]string
	if err := json.Unmarshal(data, &versions); err != nil || versions == nil {
		return nil, fmt.Errorf("resourceVersion %q was not returned by this proxy", s)
	}
	for cluster, rv := range versions {
		if cluster == "" || rv == "" {
			return nil, fmt.Errorf("resourceVersion %q names an empty cluster or version", s)
		}
	}
	return versions, nil
}

// continueToken is the state of a paged list across clusters.
type continueToken struct {
	Cluster  string `json:"cluster"`
	Continue string `json:"continue,omitempty"`
}

func encodeContinue(c continueToken) string {
	data, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	var c continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil || c.Cluster == "" {
		return continueToken{}, fmt.Errorf("continue token %q was not returned by this proxy", s)
	}
	return c, nil
}

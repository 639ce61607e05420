package env

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestExcludePlayedPods(t *testing.T) {
	stages := []byte(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
`)
	out, err := excludePlayedPods(stages)
	if err != nil {
		t.Fatal(err)
	}
	docs := yamlDocumentSeparator.Split(string(out), -1)[1:]
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), out)
	}
	if strings.Contains(docs[0], "managed-by") {
		t.Errorf("the node stage was changed:\n%s", docs[0])
	}
	var pod struct {
		Spec struct {
			Selector struct {
				MatchExpressions []struct {
					Key      string   `json:"key"`
					Operator string   `json:"operator"`
					Values   []string `json:"values"`
				} `json:"matchExpressions"`
			} `json:"selector"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &pod); err != nil {
		t.Fatal(err)
	}
	exprs := pod.Spec.Selector.MatchExpressions
	if len(exprs) != 2 || exprs[0].Key != ".metadata.deletionTimestamp" ||
		exprs[1].Key != `.metadata.labels["app.kubernetes.io/managed-by"]` || exprs[1].Operator != "NotIn" ||
		len(exprs[1].Values) != 1 || exprs[1].Values[0] != "karmadaflow" {
		t.Errorf("pod stage selector: %+v", exprs)
	}
}

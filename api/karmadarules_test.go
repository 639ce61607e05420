package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// karmadaRules runs the Karmada CRD's x-kubernetes-validations as the API server does: the CRD
// is validated first (so a rule the cost estimator refuses fails here as it would at apply),
// then each update goes through the API server's own CEL validator.
type karmadaRules struct {
	structural *schema.Structural
	validator  *cel.Validator
}

func newKarmadaRules(t *testing.T) *karmadaRules {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "crds", "operator.karmada.io_karmadas.yaml"))
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(data, crd))
	internal := &apiextensions.CustomResourceDefinition{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil))
	internal.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
	require.Empty(t, validation.ValidateCustomResourceDefinition(context.Background(), internal), "the API server would refuse the CRD")

	props := internal.Spec.Validation
	if props == nil {
		props = internal.Spec.Versions[0].Schema
	}
	s, err := schema.NewStructural(props.OpenAPIV3Schema)
	require.NoError(t, err)
	v := cel.NewValidator(s, true, celconfig.PerCallLimit)
	require.NotNil(t, v)
	return &karmadaRules{structural: s, validator: v}
}

// update returns the messages of the rules that refuse changing a Karmada of spec old to spec
// new (both JSON).
func (r *karmadaRules) update(t *testing.T, old, new string) []string {
	t.Helper()
	object := func(spec string) map[string]any {
		var s map[string]any // numbers as the API server decodes them: int64 when whole
		require.NoError(t, json.Unmarshal([]byte(spec), &s), spec)
		return map[string]any{"apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada",
			"metadata": map[string]any{"name": "demo", "namespace": "tenant1"}, "spec": s}
	}
	errs, _ := r.validator.Validate(context.Background(), nil, r.structural, object(new), object(old), celconfig.RuntimeCELCostBudget)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestKarmadaTransitionRules: the changes that would lose an instance's data are refused by
// the API server with a message naming the field and saying what to do; the changes around
// them that lose nothing pass.
func TestKarmadaTransitionRules(t *testing.T) {
	r := newKarmadaRules(t)
	const (
		external     = `{"components":{"etcd":{"external":{"endpoints":["https://etcd.example:2379"],"secretRef":{"name":"etcd"}}}}}`
		external2    = `{"components":{"etcd":{"external":{"endpoints":["https://etcd2.example:2379"],"secretRef":{"name":"etcd"}}}}}`
		localDefault = `{}`
		localEmpty   = `{"components":{"etcd":{"local":{}}}}`
		emptyDir     = `{"components":{"etcd":{"local":{"volumeData":{"emptyDir":{}}}}}}`
		emptyDirSize = `{"components":{"etcd":{"local":{"volumeData":{"emptyDir":{"sizeLimit":"1Gi"}}}}}}`
		hostPath     = `{"components":{"etcd":{"local":{"volumeData":{"hostPath":{"path":"/var/lib/karmada-etcd"}}}}}}`
		hostPathType = `{"components":{"etcd":{"local":{"volumeData":{"hostPath":{"path":"/var/lib/karmada-etcd","type":"DirectoryOrCreate"}}}}}}`
		hostPath2    = `{"components":{"etcd":{"local":{"volumeData":{"hostPath":{"path":"/var/lib/other"}}}}}}`
		claim        = `{"components":{"etcd":{"local":{"volumeData":{"volumeClaim":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}}}}}`
		claimImage   = `{"components":{"etcd":{"local":{"imageTag":"3.5.17-0","volumeData":{"volumeClaim":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}}}}}`
		claim2Gi     = `{"components":{"etcd":{"local":{"volumeData":{"volumeClaim":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"2Gi"}}}}}}}}}`
		claimClass   = `{"components":{"etcd":{"local":{"volumeData":{"volumeClaim":{"spec":{"storageClassName":"fast","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}}}}}`
	)
	const (
		kindRefused    = "spec.components.etcd: Forbidden: spec.components.etcd cannot change between local and external after creation"
		storageRefused = "spec.components.etcd.local.volumeData: Forbidden: spec.components.etcd.local.volumeData cannot change between volumeClaim, hostPath and emptyDir after creation"
		claimRefused   = "spec.components.etcd.local.volumeData.volumeClaim: Forbidden: spec.components.etcd.local.volumeData.volumeClaim cannot change after creation"
		pathRefused    = "spec.components.etcd.local.volumeData.hostPath.path: Forbidden: spec.components.etcd.local.volumeData.hostPath.path cannot change after creation"
	)
	refused := []struct{ name, old, new, message, todo string }{
		{"local to external", localDefault, external, kindRefused, "to move to another etcd, copy the data into it"},
		{"explicit local to external", localEmpty, external, kindRefused, "create a new Karmada that names it"},
		{"local with a claim to external", claim, external, kindRefused, "set it back"},
		{"external to local", external, localDefault, kindRefused, "set it back"},
		{"external to explicit local", external, hostPath, kindRefused, "set it back"},
		{"hostPath to emptyDir", hostPath, emptyDir, storageRefused, "set it back"},
		{"hostPath to unset", hostPath, localDefault, storageRefused, "take a snapshot"},
		{"volumeClaim to emptyDir", claim, emptyDir, storageRefused, "create a new Karmada with the storage you need"},
		{"volumeClaim to hostPath", claim, hostPath, storageRefused, "set it back"},
		{"emptyDir to volumeClaim", emptyDir, claim, storageRefused, "set it back"},
		{"unset to hostPath", localDefault, hostPath, storageRefused, "set it back"},
		{"claim size", claim, claim2Gi, claimRefused, "set it back"},
		{"claim class", claim, claimClass, claimRefused, "set it back"},
		{"hostPath path", hostPath, hostPath2, pathRefused, "set it back"},
		{"etcd replicas", localDefault, `{"components":{"etcd":{"local":{"replicas":3}}}}`,
			"spec.components.etcd.local.replicas: Forbidden: spec.components.etcd.local.replicas cannot change after creation", "create a new Karmada"},
		{"host cluster", localDefault, `{"hostCluster":{"secretRef":{"name":"host"}}}`,
			"spec.hostCluster.secretRef: Forbidden: spec.hostCluster.secretRef cannot be set, changed or removed after creation", "create a new Karmada"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			messages := r.update(t, c.old, c.new)
			require.Len(t, messages, 1, "%q", messages)
			assert.True(t, strings.HasPrefix(messages[0], c.message), "%s", messages[0])
			assert.Contains(t, messages[0], c.todo)
		})
	}
	for _, c := range []struct{ name, old, new string }{
		{"unchanged local", localDefault, localDefault},
		{"local unset to explicit", localDefault, localEmpty},
		{"emptyDir unset to explicit", localDefault, emptyDir},
		{"emptyDir size", emptyDir, emptyDirSize},
		{"external endpoints", external, external2},
		{"hostPath type", hostPath, hostPathType},
		{"same claim, new image", claim, claimImage},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Empty(t, r.update(t, c.old, c.new))
		})
	}
}

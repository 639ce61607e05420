package provisioning

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestDeploymentRolledOut(t *testing.T) {
	d := func(generation int64, status appsv1.DeploymentStatus) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: status}
	}
	complete := appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	cases := []struct {
		name   string
		d      *appsv1.Deployment
		done   bool
		reason string
	}{
		{"complete", d(3, complete), true, "rolled out"},
		{"new generation not observed", d(4, complete), false, "generation 4 not yet observed"},
		{"one Ready pod of the old revision", d(3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 0, ReadyReplicas: 2, AvailableReplicas: 2}),
			false, "0 of 2 replicas updated"},
		{"old pod still there", d(3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}),
			false, "1 old replicas pending termination"},
		{"updated but one not ready", d(3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}),
			false, "1 of 2 updated replicas ready"},
	}
	for _, c := range cases {
		done, reason := deploymentRolledOut(c.d)
		assert.Equal(t, c.done, done, c.name)
		assert.Equal(t, c.reason, reason, c.name)
	}
}

func TestStatefulSetRolledOut(t *testing.T) {
	sts := func(status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}, Status: status}
	}
	done, _ := statefulSetRolledOut(sts(appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3,
		CurrentRevision: "r2", UpdateRevision: "r2"}))
	assert.True(t, done)
	done, reason := statefulSetRolledOut(sts(appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3,
		CurrentRevision: "r1", UpdateRevision: "r2"}))
	assert.False(t, done, "pods of the old revision remain")
	assert.Equal(t, "3 of 3 replicas updated", reason)
	done, reason = statefulSetRolledOut(sts(appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2,
		CurrentRevision: "r2", UpdateRevision: "r2"}))
	assert.False(t, done)
	assert.Equal(t, "2 of 3 replicas ready", reason)
	done, _ = statefulSetRolledOut(sts(appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3}))
	assert.False(t, done, "generation not observed")
}

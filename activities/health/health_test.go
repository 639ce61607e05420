package health

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadyConditionHoldsOnlyAReadyClusterThroughAFailure(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonClusterReady}
	failed := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonClusterNotReachable}

	assert.Equal(t, ready, ReadyCondition(&ready, failed, true), "held")
	assert.Equal(t, failed, ReadyCondition(&ready, failed, false), "the threshold passed")
	assert.Equal(t, failed, ReadyCondition(nil, failed, true), "a new cluster gets what was observed")
	assert.Equal(t, ready, ReadyCondition(&failed, ready, true), "a success counts at once")
}

package observability

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/klog/v2"
)

func TestKlogGoesThroughZap(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	RouteKlog(zap.New(core).Named("worker"))
	defer klog.ClearLogger()

	klog.ErrorS(nil, "watch of member2 failed", "cluster", "member2")

	entries := logs.FilterMessage("watch of member2 failed").All()
	require.Len(t, entries, 1)
	assert.Equal(t, "worker.klog", entries[0].LoggerName)
	assert.Equal(t, "member2", entries[0].ContextMap()["cluster"])
	assert.Equal(t, zapcore.ErrorLevel, entries[0].Level)
	assert.Empty(t, entries[0].Stack, "a client library's error carries no stack trace")
}

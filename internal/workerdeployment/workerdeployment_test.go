package workerdeployment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

func TestNewerComparesCreationWithTheLastChangeOfTheCurrentVersion(t *testing.T) {
	changed := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	info := client.WorkerDeploymentInfo{
		VersionSummaries: []client.WorkerDeploymentVersionSummary{
			{Version: worker.WorkerDeploymentVersion{DeploymentName: "d", BuildID: "old"}, CreateTime: changed.Add(-time.Hour)},
			{Version: worker.WorkerDeploymentVersion{DeploymentName: "d", BuildID: "new"}, CreateTime: changed.Add(time.Minute)},
		},
		RoutingConfig: client.WorkerDeploymentRoutingConfig{CurrentVersionChangedTime: changed},
	}
	for buildID, want := range map[string][2]bool{"old": {true, false}, "new": {true, true}, "unknown": {false, false}} {
		registered, newer := newer(info, buildID)
		assert.Equal(t, want, [2]bool{registered, newer}, buildID)
	}
	// A deployment whose current version never changed: any registered version is the newest.
	info.RoutingConfig.CurrentVersionChangedTime = time.Time{}
	registered, isNewer := newer(info, "old")
	assert.True(t, registered && isNewer)
}

func TestVersionStringsHoldBothSeparators(t *testing.T) {
	v := worker.WorkerDeploymentVersion{DeploymentName: "karmadaflow", BuildID: "v1.2.3"}
	assert.Equal(t, []string{"karmadaflow:v1.2.3", "karmadaflow.v1.2.3"}, VersionStrings(v))
	assert.Equal(t, "'karmadaflow:v1.2.3', 'karmadaflow.v1.2.3'", quoted(VersionStrings(v)))
}

package bench

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScalePlanChoosesDistinctClustersFromItsSeed(t *testing.T) {
	members := []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}
	opts := ScaleOptions{Count: 200, Providers: 2, Consumers: 3, Seed: 7}
	plan := scalePlan(members, opts)
	require.Len(t, plan, 200)
	uses := map[string]int{}
	for _, s := range plan {
		clusters := append(slices.Clone(s.providers), s.consumers...)
		require.Len(t, s.providers, 2)
		require.Len(t, s.consumers, 3)
		slices.Sort(clusters)
		assert.Len(t, slices.Compact(clusters), 5, "%s: a cluster chosen twice", s.name)
		for _, c := range clusters {
			uses[c]++
		}
	}
	assert.Len(t, uses, len(members), "every member is used")
	assert.Equal(t, plan, scalePlan(members, opts), "the same seed, the same plan")
	opts.Seed = 8
	assert.NotEqual(t, plan, scalePlan(members, opts), "another seed, another plan")
}

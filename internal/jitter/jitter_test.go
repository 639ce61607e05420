package jitter

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSpreadIsStableAndBounded(t *testing.T) {
	period := 10 * time.Minute
	assert.Equal(t, Spread("mcs/default/foo", period), Spread("mcs/default/foo", period), "the same name, the same period")
	seen := map[time.Duration]bool{}
	var lowest, highest time.Duration = period * 2, 0
	for i := range 1000 {
		d := Spread(fmt.Sprintf("mcs/bench/svc-%d", i), period)
		assert.GreaterOrEqual(t, d, period*8/10)
		assert.Less(t, d, period*12/10)
		seen[d] = true
		lowest, highest = min(lowest, d), max(highest, d)
	}
	assert.Greater(t, len(seen), 900, "names get different periods")
	assert.Greater(t, highest-lowest, period*35/100, "spread over most of the range")
}

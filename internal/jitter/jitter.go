// Package jitter spreads periodic work over time: each name gets its own stable offset, so
// that entities started together (thousands of workflows after a cold start) do not wake
// together. Its results depend on the name alone, so workflow code may use them.
package jitter

import (
	"hash/fnv"
	"time"
)

// Spread is period stretched or shrunk by up to a fifth, by an amount fixed for name:
// between 0.8 and 1.2 times period.
func Spread(name string, period time.Duration) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	const steps = 1 << 16
	frac := float64(h.Sum32()%steps) / steps // [0, 1)
	return time.Duration(float64(period) * (0.8 + 0.4*frac))
}

package summary

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestList(t *testing.T) {
	assert.Equal(t, "none", List(nil))
	assert.Equal(t, "member1, member2", List([]string{"member1", "member2"}))
	assert.Equal(t, "a, b, c, d, e and 2 more", List([]string{"a", "b", "c", "d", "e", "f", "g"}))
}

func TestCount(t *testing.T) {
	assert.Equal(t, "0 EndpointSlices", Count(0, "EndpointSlice"))
	assert.Equal(t, "1 EndpointSlice", Count(1, "EndpointSlice"))
	assert.Equal(t, "3 EndpointSlices", Count(3, "EndpointSlice"))
}

func TestTime(t *testing.T) {
	assert.Equal(t, "never", Time(time.Time{}))
	assert.Equal(t, "2026-11-24 03:04:05 UTC", Time(time.Date(2026, 11, 24, 4, 4, 5, 600, time.FixedZone("CET", 3600))))
}

func TestErrorIsOneShortLine(t *testing.T) {
	assert.Equal(t, "connection refused (dial tcp 127.0.0.1:1)", Error("connection refused\n  (dial tcp 127.0.0.1:1)"))
	long := Error(strings.Repeat("é", 300))
	assert.Equal(t, strings.Repeat("é", maxError)+"…", long, "cut at a character, not inside one")
}

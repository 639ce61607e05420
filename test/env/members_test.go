package env

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemberCountsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		members, light int
		want           string
	}{
		{MaxMembers + 1, MaxMembers, "members must be between 1 and"},
		{MaxFullMembers + 1, 0, fmt.Sprintf("at most %d members may be full", MaxFullMembers)},
		{MaxMembers, MaxMembers - MaxFullMembers - 1, fmt.Sprintf("at most %d members may be full", MaxFullMembers)},
		{2, 3, "light members must be between 0 and the 2 members"},
		{2, -1, "light members must be between"},
	} {
		opts := Options{Members: tc.members, LightMembers: tc.light}
		assert.ErrorContains(t, opts.complete(), tc.want, "%d members, %d light", tc.members, tc.light)
	}
}

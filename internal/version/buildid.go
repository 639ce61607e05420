package version

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"sync"
)

// BuildID names this build among the worker's deployment versions (Temporal's Worker
// Versioning): the stamped version, else, for a build without the stamp, the build ID of its
// executable (UnstampedBuildID), so that two unstamped builds of different code never share one
// (a run pinned to one is never replayed by the other).
func BuildID() string {
	if Version != "dev" {
		return Version
	}
	return executableBuildID()
}

var executableBuildID = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err == nil {
		var id string
		if id, err = UnstampedBuildID(path); err == nil {
			return id
		}
	}
	return "dev-unreadable"
})

// UnstampedBuildID is the build ID of the unstamped executable at path: "dev-" and the start of
// its SHA-256.
func UnstampedBuildID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return "dev-" + hex.EncodeToString(sum.Sum(nil))[:12], nil
}

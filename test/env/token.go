package env

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// randomToken returns a 32-byte random bearer token in hex.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

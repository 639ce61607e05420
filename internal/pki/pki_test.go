package pki

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenewalInTheLastThird(t *testing.T) {
	ca, err := NewAuthority("test-ca")
	require.NoError(t, err)
	spec := LeafSpec{CommonName: "server", DNSNames: []string{"a.example"}, Server: true}
	for _, validity := range []time.Duration{3 * time.Minute, DefaultLeafValidity} {
		pair, err := ca.Issue(spec, validity)
		require.NoError(t, err)
		cert, err := ParseCert(pair.Cert)
		require.NoError(t, err)
		issued := time.Now()

		lifetime := cert.NotAfter.Sub(cert.NotBefore)
		assert.InDelta(t, float64(validity+min(time.Hour, validity/10)), float64(lifetime), float64(time.Second), "backdated by at most a tenth")
		assert.Equal(t, cert.NotAfter.Add(-lifetime/3), RenewAt(cert))

		assert.True(t, ca.Covers(pair.Cert, spec, issued), "fresh")
		early := RenewAt(cert).Add(-lifetime / 6)
		assert.True(t, ca.Covers(pair.Cert, spec, early.Add(-time.Second)), "before the sweep window")
		assert.False(t, ca.Covers(pair.Cert, spec, early), "certificates due soon renew with the first")
		assert.False(t, ca.Covers(pair.Cert, spec, RenewAt(cert)), "in the last third")
		assert.False(t, ca.Covers(pair.Cert, spec, cert.NotAfter.Add(time.Second)), "expired")
	}
}

func TestCoversChecksNamesAndSigner(t *testing.T) {
	ca, err := NewAuthority("test-ca")
	require.NoError(t, err)
	other, err := NewAuthority("other-ca")
	require.NoError(t, err)
	spec := LeafSpec{CommonName: "server", DNSNames: []string{"a.example"}, Server: true}
	pair, err := ca.Issue(spec, time.Hour)
	require.NoError(t, err)
	now := time.Now()
	assert.True(t, ca.Covers(pair.Cert, spec, now))
	assert.False(t, other.Covers(pair.Cert, spec, now), "signed by another CA")
	assert.False(t, ca.Covers(pair.Cert, LeafSpec{DNSNames: []string{"b.example"}}, now), "a name it lacks")
}

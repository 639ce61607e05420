// Package pki makes the certificates and keys of a Kubernetes control plane: certificate
// authorities, the serving and client certificates they sign, and service-account signing keys.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// caValidity is how long generated CAs are valid; leaves default to DefaultLeafValidity.
const (
	caValidity          = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour
)

// KeyPair is a certificate (or public key) and its private key, PEM-encoded.
type KeyPair struct {
	Cert, Key []byte
}

// Authority signs certificates.
type Authority struct {
	pair KeyPair
	cert *x509.Certificate
	key  crypto.Signer
}

// LeafSpec describes a certificate to issue.
type LeafSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

// NewAuthority makes a new self-signed CA.
func NewAuthority(commonName string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key of CA %s: %w", commonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA %s: %w", commonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return ParseAuthority(KeyPair{Cert: pemBlock("CERTIFICATE", der), Key: keyPEM})
}

// ParseAuthority reads a CA from its PEM certificate and key.
func ParseAuthority(pair KeyPair) (*Authority, error) {
	cert, err := ParseCert(pair.Cert)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(pair.Key)
	if block == nil {
		return nil, errors.New("CA key is not PEM")
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	return &Authority{pair: pair, cert: cert, key: signer}, nil
}

// Pair is the CA's certificate and key, PEM-encoded.
func (ca *Authority) Pair() KeyPair { return ca.pair }

// Certificate is the CA's parsed certificate.
func (ca *Authority) Certificate() *x509.Certificate { return ca.cert }

// Issue signs a new leaf certificate valid for validity.
func (ca *Authority) Issue(spec LeafSpec, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating key of %s: %w", spec.CommonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:    now.Add(-backdate(validity)),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing %s: %w", spec.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: pemBlock("CERTIFICATE", der), Key: keyPEM}, nil
}

// backdate is how far before its issue a leaf is valid, for clocks behind the issuer's: an
// hour, or a tenth of a short validity (a certificate valid for minutes must not spend most
// of its life before its issue).
func backdate(validity time.Duration) time.Duration {
	return min(time.Hour, validity/10)
}

// RenewAt is when cert is due for renewal: when it enters the last third of its validity.
func RenewAt(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

// DueForRenewal reports whether cert is to be renewed at now: from RenewAt, or up to a sixth
// of its validity before. The early part lets certificates issued in the same install, which
// may be a minute apart, renew together in one rollout rather than one after the other.
func DueForRenewal(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(RenewAt(cert).Add(-cert.NotAfter.Sub(cert.NotBefore) / 6))
}

// Covers reports whether the certificate in certPEM is signed by ca, names every DNS name
// and IP of spec, and is not due for renewal at now.
func (ca *Authority) Covers(certPEM []byte, spec LeafSpec, now time.Time) bool {
	cert, err := ParseCert(certPEM)
	if err != nil || cert.CheckSignatureFrom(ca.cert) != nil || DueForRenewal(cert, now) {
		return false
	}
	for _, name := range spec.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range spec.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// NewSigningKey is a service-account signing key pair (private and public PEM).
func NewSigningKey() (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: pemBlock("PUBLIC KEY", pub), Key: keyPEM}, nil
}

// ParseCert reads a PEM certificate.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return serial, nil
}

// SplitSANs sorts names into IP addresses and DNS names.
func SplitSANs(names []string) (dns []string, ips []net.IP) {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else if n != "" {
			dns = append(dns, n)
		}
	}
	return dns, ips
}

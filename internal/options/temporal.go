package options

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// TemporalClientOptions are the options of the Temporal client, logging to logger and
// reporting SDK metrics to metrics. With TLS, the CA bundle is read here, once; the client
// certificate and the API key are read again when their files change, so a rotated Secret
// needs no restart.
func (o *Options) TemporalClientOptions(logger log.Logger, metrics client.MetricsHandler) (client.Options, error) {
	opts := client.Options{
		HostPort:       o.TemporalAddress,
		Namespace:      o.TemporalNamespace,
		Logger:         logger,
		MetricsHandler: metrics,
	}
	if o.temporalTLSOn() {
		cfg, err := o.temporalTLSConfig()
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.TLS = cfg
	}
	if o.TemporalAPIKeyFile != "" {
		key := &fileValue{path: o.TemporalAPIKeyFile}
		if _, err := key.read(); err != nil {
			return client.Options{}, fmt.Errorf("--temporal-api-key-file: %w", err)
		}
		opts.Credentials = client.NewAPIKeyDynamicCredentials(func(context.Context) (string, error) {
			v, err := key.read()
			return strings.TrimSpace(string(v)), err
		})
	}
	return opts, nil
}

func (o *Options) temporalTLSOn() bool {
	return o.TemporalTLS || o.TemporalTLSCAFile != "" || o.TemporalTLSCertFile != "" ||
		o.TemporalTLSServerName != "" || o.TemporalAPIKeyFile != ""
}

func (o *Options) temporalTLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TemporalTLSServerName}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(o.TemporalAddress)
		if err != nil {
			return nil, fmt.Errorf("--temporal-address: %w", err)
		}
		cfg.ServerName = host
	}
	if o.TemporalTLSCAFile != "" {
		pem, err := os.ReadFile(o.TemporalTLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("--temporal-tls-ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--temporal-tls-ca-file %s holds no PEM certificate", o.TemporalTLSCAFile)
		}
	}
	if o.TemporalTLSCertFile != "" {
		pair := &keyPair{cert: fileValue{path: o.TemporalTLSCertFile}, key: fileValue{path: o.TemporalTLSKeyFile}}
		if _, err := pair.load(); err != nil {
			return nil, fmt.Errorf("--temporal-tls-cert-file and --temporal-tls-key-file: %w", err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair.load() }
	}
	return cfg, nil
}

// fileValue is a file's content, read again when its modification time or size changes.
type fileValue struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	data    []byte
}

func (f *fileValue) read() ([]byte, error) {
	info, err := os.Stat(f.path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data != nil && info.ModTime().Equal(f.modTime) && info.Size() == f.size {
		return f.data, nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s is empty", f.path)
	}
	f.data, f.modTime, f.size = data, info.ModTime(), info.Size()
	return data, nil
}

// keyPair is a client certificate and its key, parsed again when either file changes.
type keyPair struct {
	cert, key fileValue
}

func (p *keyPair) load() (*tls.Certificate, error) {
	cert, err := p.cert.read()
	if err != nil {
		return nil, err
	}
	key, err := p.key.read()
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s and %s", p.cert.path, p.key.path), err)
	}
	return &pair, nil
}

package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// TLSTransport returns a transport for https:// APIs that trusts the PEM
// CA certificates in caFile ("": the system's roots) and presents the PEM
// certificate certFile with its key keyFile to a server that asks for one
// (mutual TLS; both or neither). For Options.Transport.
func TLSTransport(caFile, certFile, keyFile string) (*http.Transport, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs its key, and a key its certificate")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" {
		// The errors of LoadX509KeyPair quote no key material.
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return tr, nil
}

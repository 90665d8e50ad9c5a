package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon/client"
)

// connectPeer is how kcctl migrate reaches a Kafka Connect cluster's REST
// API: its URL, and the basic credentials and TLS settings of a Connect
// worker with a BasicAuth REST extension or HTTPS listeners.
type connectPeer struct {
	url          string
	user         string
	passwordFile string
	caFile       string
	certFile     string
	keyFile      string
}

func (p *connectPeer) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.url, "connect-url", "", "REST URL of the Kafka Connect cluster, to check that its connectors are stopped")
	fl.StringVar(&p.user, "connect-user", "", "User of Kafka Connect's REST API (its BasicAuth extension)")
	fl.StringVar(&p.passwordFile, "connect-password-file", "", "File holding --connect-user's password (env KCCTL_CONNECT_PASSWORD)")
	fl.StringVar(&p.caFile, "connect-ca-file", "", "PEM CA certificates to verify Kafka Connect's HTTPS listener with (default: the system's)")
	fl.StringVar(&p.certFile, "connect-client-cert", "", "PEM client certificate for Kafka Connect's HTTPS listener (with --connect-client-key)")
	fl.StringVar(&p.keyFile, "connect-client-key", "", "PEM private key of --connect-client-cert")
}

// client returns a client of the Kafka Connect cluster's REST API.
func (p *connectPeer) client() (*client.Client, error) {
	var opts client.Options
	if p.caFile != "" || p.certFile != "" || p.keyFile != "" {
		tr, err := client.TLSTransport(p.caFile, p.certFile, p.keyFile)
		if err != nil {
			return nil, &usageError{fmt.Errorf("Kafka Connect TLS: %w", err)}
		}
		opts.Transport = tr
	}
	password := os.Getenv("KCCTL_CONNECT_PASSWORD")
	if p.passwordFile != "" {
		b, err := os.ReadFile(p.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--connect-password-file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	switch {
	case p.user != "" && password == "":
		return nil, &usageError{errors.New("--connect-user needs a password: --connect-password-file or KCCTL_CONNECT_PASSWORD")}
	case p.user == "" && p.passwordFile != "":
		return nil, &usageError{errors.New("--connect-password-file needs --connect-user")}
	}
	opts.Credentials = client.Credentials{User: p.user, Password: password}
	return client.NewWithOptions(p.url, opts), nil
}

package daemon

import (
	"crypto/tls"
	"fmt"

	"github.com/kcd-project/kcd/daemon/tlsreload"
)

// restTLS holds the REST API's TLS files, each loaded again when it
// changes: the node's certificate (served, and presented to other nodes),
// the CAs of client certificates, and the CAs of other nodes'
// certificates.
type restTLS struct {
	cert      *tlsreload.KeyPair // nil: plain HTTP
	clientCAs *tlsreload.Pool    // nil: no client certificates asked for
	roots     *tlsreload.Pool    // nil: the system's roots
}

// loadRESTTLS loads the files that the configuration names.
func (n *Node) loadRESTTLS() error {
	log := n.log.With("subsys", "rest-tls")
	var err error
	if n.cfg.RESTTLSCert != "" {
		if n.restTLS.cert, err = tlsreload.LoadKeyPair(n.cfg.RESTTLSCert, n.cfg.RESTTLSKey, log); err != nil {
			return fmt.Errorf("rest-tls-cert: %w", err)
		}
	}
	if n.cfg.RESTTLSClientCA != "" {
		if n.restTLS.clientCAs, err = tlsreload.LoadPool(n.cfg.RESTTLSClientCA, log); err != nil {
			return fmt.Errorf("rest-tls-client-ca: %w", err)
		}
	}
	if n.cfg.RESTTLSCA != "" {
		if n.restTLS.roots, err = tlsreload.LoadPool(n.cfg.RESTTLSCA, log); err != nil {
			return fmt.Errorf("rest-tls-ca: %w", err)
		}
	}
	return nil
}

// restServerTLS is the REST listener's TLS configuration; nil for HTTP.
func (n *Node) restServerTLS() *tls.Config {
	if n.restTLS.cert == nil {
		return nil
	}
	return tlsreload.ServerConfig(n.restTLS.cert, n.restTLS.clientCAs)
}

// restScheme is the scheme of this node's REST URL.
func (n *Node) restScheme() string {
	if n.cfg.RESTTLS() {
		return "https://"
	}
	return "http://"
}

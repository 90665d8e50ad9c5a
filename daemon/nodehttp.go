package daemon

import (
	"crypto/tls"
	"net/http"
	"time"
)

// Every call this node makes to another node's REST API (forwarding to
// the leader, worker heartbeats, the remote store, joining) goes through
// nodeClient or, for a client that tunes its own transport, through
// restClientTLS and asNode: calls between nodes use the REST API's TLS
// settings and authenticate as the node, never with a user's credentials.

// restClientTLS is the TLS configuration of calls to other nodes' REST
// APIs; nil while the REST API is plain HTTP.
func (n *Node) restClientTLS() *tls.Config { return nil }

// asNode wraps rt so that every request it sends authenticates as this
// node.
func (n *Node) asNode(rt http.RoundTripper) http.RoundTripper { return rt }

// nodeClient returns a client for calls to other nodes, timeout bounding
// each (0: none, for streams).
func (n *Node) nodeClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = n.restClientTLS()
	return &http.Client{Timeout: timeout, Transport: n.asNode(tr)}
}

// remoteStoreTransport adapts the remote store's HTTP transport to calls
// between nodes.
func (n *Node) remoteStoreTransport(tr *http.Transport) http.RoundTripper {
	tr.TLSClientConfig = n.restClientTLS()
	return n.asNode(tr)
}

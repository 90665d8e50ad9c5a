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
// node: the cluster's node secret as a bearer token, in place of any
// Authorization header. Without a node secret, rt as it is.
func (n *Node) asNode(rt http.RoundTripper) http.RoundTripper {
	if len(n.nodeSecret) == 0 {
		return rt
	}
	return nodeAuth{rt: rt, header: "Bearer " + string(n.nodeSecret)}
}

// nodeAuth sets the node's Authorization header on a copy of each request.
type nodeAuth struct {
	rt     http.RoundTripper
	header string
}

func (a nodeAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = r.Header.Clone()
	r2.Header.Set("Authorization", a.header)
	return a.rt.RoundTrip(r2)
}

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

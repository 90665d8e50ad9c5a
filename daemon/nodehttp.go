package daemon

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/kcd-project/kcd/daemon/tlsreload"
)

// Every call this node makes to another node's REST API (forwarding to
// the leader, worker heartbeats, the remote store, joining) goes through
// nodeClient or, for a client that tunes its own transport, through
// restClientTLS and asNode: calls between nodes use the REST API's TLS
// settings and authenticate as the node, never with a user's credentials.

// restClientTLS is the TLS configuration of calls to other nodes' REST
// APIs: it trusts rest-tls-ca (or the system's roots) and presents this
// node's REST certificate to a node that asks for one (mutual TLS). Nil
// when no REST TLS setting is given. The transports of nodeTransport and
// remoteStoreTransport take the files as they are at each connection
// (withRESTTLS).
func (n *Node) restClientTLS() *tls.Config {
	if n.restTLS.cert == nil && n.restTLS.roots == nil {
		return nil
	}
	return tlsreload.ClientConfig(n.restTLS.roots, n.restTLS.cert)
}

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
	return &http.Client{Timeout: timeout, Transport: n.nodeTransport()}
}

// nodeIdleConns is how many idle connections a node keeps to each other
// node. A follower forwards every worker heartbeat and write it takes to
// the leader at once: with http.DefaultTransport's two, any three at once
// closed one after use and dialled again for the next. Connections stay
// bounded by the calls in flight, and idle ones close after 30 s (below
// the REST server's idle timeout, so the client closes first).
const nodeIdleConns = 32

// nodeTransport sends calls to other nodes (for client.Options).
func (n *Node) nodeTransport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = nodeIdleConns
	tr.IdleConnTimeout = 30 * time.Second
	n.withRESTTLS(tr)
	return n.asNode(tr)
}

// remoteStoreTransport adapts the remote store's HTTP transport to calls
// between nodes.
func (n *Node) remoteStoreTransport(tr *http.Transport) http.RoundTripper {
	n.withRESTTLS(tr)
	return n.asNode(tr)
}

// withRESTTLS makes tr's https connections use restClientTLS, with the
// certificate files as they are when each connection is made.
func (n *Node) withRESTTLS(tr *http.Transport) {
	tr.TLSClientConfig = n.restClientTLS()
	if tr.TLSClientConfig == nil {
		return
	}
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	hs := tr.TLSHandshakeTimeout
	if hs <= 0 {
		hs = 10 * time.Second
	}
	tr.DialTLSContext = tlsreload.DialTLS(n.restTLS.roots, n.restTLS.cert, dial, hs)
}

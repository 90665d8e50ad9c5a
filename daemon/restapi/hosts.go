package restapi

import (
	"net"
	"net/http"
	"strings"
)

// HostPolicy says which Host headers the API answers to.
type HostPolicy struct {
	// Names are allowed host names or addresses, compared without case
	// and without the port; "*" allows any.
	Names []string
	// Loopback allows any loopback address and localhost.
	Loopback bool
}

// Allows tells whether a request's Host header (host or host:port) is
// allowed.
func (p HostPolicy) Allows(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if p.Loopback {
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
			return true
		}
	}
	for _, n := range p.Names {
		if n == "*" || strings.EqualFold(n, host) {
			return true
		}
	}
	return false
}

// HostPolicyFor is the policy of setting (rest-allowed-hosts) for a node
// listening on listenAddr: the names it lists; when empty, loopback names
// only for a loopback listener (a page whose name an attacker points at
// 127.0.0.1 — DNS rebinding — sends its own name as Host), else any.
func HostPolicyFor(setting, listenAddr string) HostPolicy {
	var p HostPolicy
	for n := range strings.SplitSeq(setting, ",") {
		if n = strings.TrimSpace(n); n != "" {
			p.Names = append(p.Names, n)
		}
	}
	if len(p.Names) > 0 {
		return p
	}
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		host = listenAddr
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
		return HostPolicy{Loopback: true}
	}
	return HostPolicy{Names: []string{"*"}}
}

// checkHost refuses, with 403, a request whose Host header the policy
// does not allow.
func checkHost(p HostPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Allows(r.Host) {
			writeError(w, Errorf(http.StatusForbidden, "this node does not answer to host %q (see rest-allowed-hosts)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

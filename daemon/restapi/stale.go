package restapi

import (
	"net/http"
	"strconv"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// Headers of reads that may be stale (see package api).
const (
	AllowStaleHeader = kcdapi.AllowStaleHeader
	StaleHeader      = kcdapi.StaleHeader
)

// staleRoutes are the REST reads of connector configs, statuses, tasks and
// offsets: they may be served stale (store.AllowStale) rather than wait
// for, or fail without, a Raft leader.
var staleRoutes = map[string]bool{
	"/connectors":                            true,
	"/connectors/{name}":                     true,
	"/connectors/{name}/config":              true,
	"/connectors/{name}/status":              true,
	"/connectors/{name}/tasks":               true,
	"/connectors/{name}/tasks/{task}/status": true,
	"/connectors/{name}/offsets":             true,
	"/connectors/{name}/topics":              true,
}

// mayBeStale runs fn under store.AllowStale and adds StaleHeader to its
// answer when a read was stale.
func mayBeStale(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		ctx, st := store.AllowStale(r.Context())
		status, body, e := fn(r.WithContext(ctx))
		return status, markStale(st, body), e
	}
}

// markStale adds StaleHeader to body when st recorded a stale read.
func markStale(st *store.Staleness, body any) any {
	age, stale := st.Stale()
	if !stale {
		return body
	}
	h := http.Header{StaleHeader: {strconv.FormatInt(max(age.Milliseconds(), 1), 10)}}
	if wh, ok := body.(withHeader); ok {
		for k, v := range wh.header {
			h[k] = v
		}
		body = wh.body
	}
	return withHeader{header: h, body: body}
}

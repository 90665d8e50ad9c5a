package restapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/kcd-project/kcd/daemon/restauth"
)

// Roles each route needs when the API authenticates (Options.Auth),
// keyed by the route's mux pattern. Every route has one: a route missing
// here fails TestEveryRouteHasARole, and is admin-only meanwhile.
const (
	roleOpen    = restauth.RoleNone
	roleRead    = restauth.RoleRead
	roleOperate = restauth.RoleOperate
	roleAdmin   = restauth.RoleAdmin
	roleNode    = restauth.RoleNode
)

var routeRoles = map[string]restauth.Role{
	"GET /{$}":    roleOpen,
	"GET /health": roleOpen,
	// Anything no route takes (404, 405) answers callers of any role.
	"/": roleRead,

	"GET /kcd/v1/version": roleRead,

	// Cluster membership and leadership.
	"GET /kcd/v1/cluster":                 roleRead,
	"POST /kcd/v1/cluster/members":        roleAdmin,
	"DELETE /kcd/v1/cluster/members/{id}": roleAdmin,
	"POST /kcd/v1/cluster/leader":         roleAdmin,

	// Raw store keys: kcd's own metadata, the store settings included.
	"GET /kcd/v1/store/keys":             roleAdmin,
	"GET /kcd/v1/store/keys/{key...}":    roleAdmin,
	"PUT /kcd/v1/store/keys/{key...}":    roleAdmin,
	"DELETE /kcd/v1/store/keys/{key...}": roleAdmin,
	"POST /kcd/v1/store/switch":          roleAdmin,
	"GET /kcd/v1/store/status":           roleRead,

	// The peer store protocol of remote stores: nodes only.
	"POST /kcd/v1/store/get":     roleNode,
	"POST /kcd/v1/store/put":     roleNode,
	"POST /kcd/v1/store/delete":  roleNode,
	"POST /kcd/v1/store/cas":     roleNode,
	"POST /kcd/v1/store/scan":    roleNode,
	"POST /kcd/v1/store/batch":   roleNode,
	"GET /kcd/v1/store/revision": roleNode,
	"POST /kcd/v1/store/compact": roleNode,
	"POST /kcd/v1/store/watch":   roleNode,

	// Kafka Connect's connector API.
	"GET /connectors":                                 roleRead,
	"POST /connectors":                                roleOperate,
	"GET /connectors/{name}":                          roleRead,
	"DELETE /connectors/{name}":                       roleOperate,
	"GET /connectors/{name}/config":                   roleRead,
	"PUT /connectors/{name}/config":                   roleOperate,
	"PATCH /connectors/{name}/config":                 roleOperate,
	"GET /connectors/{name}/status":                   roleRead,
	"GET /connectors/{name}/tasks":                    roleRead,
	"GET /connectors/{name}/tasks/{task}/status":      roleRead,
	"POST /connectors/{name}/tasks/{task}/restart":    roleOperate,
	"POST /connectors/{name}/restart":                 roleOperate,
	"PUT /connectors/{name}/pause":                    roleOperate,
	"PUT /connectors/{name}/resume":                   roleOperate,
	"PUT /connectors/{name}/stop":                     roleOperate,
	"GET /connectors/{name}/offsets":                  roleRead,
	"PATCH /connectors/{name}/offsets":                roleOperate,
	"DELETE /connectors/{name}/offsets":               roleOperate,
	"GET /connectors/{name}/topics":                   roleRead,
	"PUT /connectors/{name}/topics/reset":             roleOperate,
	"GET /connector-plugins":                          roleRead,
	"GET /connector-plugins/{plugin}/config":          roleRead,
	"PUT /connector-plugins/{plugin}/config/validate": roleOperate,

	// Workers: the coordinator's session endpoints are for nodes; weights
	// and drains are the operator's.
	"POST /kcd/v1/workers/{id}/heartbeat": roleNode,
	"DELETE /kcd/v1/workers/{id}/session": roleNode,
	"GET /kcd/v1/workers":                 roleRead,
	"GET /kcd/v1/worker":                  roleRead,
	"PUT /kcd/v1/workers/{id}/weight":     roleAdmin,
	"PUT /kcd/v1/workers/{id}/drain":      roleAdmin,
	"PUT /kcd/v1/workers/{id}/undrain":    roleAdmin,
	"GET /kcd/v1/assignments":             roleRead,
	"GET /kcd/v1/rebalances":              roleRead,
	"GET /kcd/v1/rebalances/plan":         roleRead,
	"GET /kcd/v1/events":                  roleRead,

	// Imports and export.
	"POST /kcd/v1/imports":              roleAdmin,
	"GET /kcd/v1/imports":               roleRead,
	"GET /kcd/v1/imports/{id}":          roleRead,
	"DELETE /kcd/v1/imports/{id}":       roleAdmin,
	"POST /kcd/v1/imports/{id}/offsets": roleAdmin,
	"POST /kcd/v1/imports/{id}/commit":  roleAdmin,
	"GET /kcd/v1/export":                roleRead,

	// Loggers: anyone who reads may see the levels; changing them is the
	// admin's (a DEBUG level can flood the disk).
	"GET /admin/loggers":          roleRead,
	"GET /admin/loggers/{logger}": roleRead,
	"PUT /admin/loggers/{logger}": roleAdmin,

	// Metrics: what a dashboard reads, as any other read endpoint.
	"GET /metrics": roleRead,
}

// forwardedUserHeader names, on a request a node forwards, the user whose
// request it is, for the logs of the node that serves it. It is believed
// only from a node.
const forwardedUserHeader = "X-Kcd-Forwarded-User"

// challenge is the WWW-Authenticate header of a 401.
const challenge = `Basic realm="kcd", Bearer realm="kcd"`

type principalKey struct{}

// principalOf returns the principal that the API authenticated for r's
// request (false when the API does not authenticate).
func principalOf(ctx context.Context) (restauth.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(restauth.Principal)
	return p, ok
}

// auditWrite logs at info a write that a user (not a node) made, with its
// outcome: who changed what. Writes that a node forwards are logged by the
// node the user called.
func (a *api) auditWrite(r *http.Request, status int) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	p, ok := principalOf(r.Context())
	if !ok || p.Role == roleNode {
		return
	}
	a.log.Info("rest write", "method", r.Method, "path", r.URL.Path, "status", status, "user", p.Name, "role", p.Role.String())
}

// requestUser names who a request comes from in logs: the user, the user
// a node forwarded it for, or "" when the API does not authenticate.
func requestUser(r *http.Request) string {
	p, ok := principalOf(r.Context())
	if !ok {
		return ""
	}
	if p.Role == restauth.RoleNode {
		if u := r.Header.Get(forwardedUserHeader); u != "" {
			return u + " (via " + p.Name + ")"
		}
	}
	return p.Name
}

// authorize answers 401 to a request without valid credentials and 403 to
// one whose principal's role does not allow its route, before anything
// else reads it. mux finds the route. A 403 is logged at info, for the
// operator's audit.
func authorize(auth *restauth.Authenticator, mux *http.ServeMux, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		need, ok := routeRoles[pattern]
		if !ok {
			need = roleAdmin
		}
		if need == roleOpen {
			next.ServeHTTP(w, r)
			return
		}
		p, err := auth.Authenticate(r)
		if err != nil {
			if errors.Is(err, restauth.ErrBusy) {
				w.Header().Set("Retry-After", "1")
				writeError(w, Errorf(http.StatusTooManyRequests, "%s", err.Error()))
				return
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, Errorf(http.StatusUnauthorized, "%s", err.Error()))
			return
		}
		if !p.Role.Allows(need) {
			log.Info("rest request refused", "method", r.Method, "path", r.URL.Path, "user", p.Name, "role", p.Role.String(), "needs", need.String())
			if need == roleNode {
				writeError(w, Errorf(http.StatusForbidden, "%s %s is called only by kcd nodes, not by users (user %q)", r.Method, r.URL.Path, p.Name))
			} else {
				writeError(w, Errorf(http.StatusForbidden, "user %q has the %s role; %s %s needs %s", p.Name, p.Role, r.Method, r.URL.Path, need))
			}
			return
		}
		if p.Role != roleNode {
			r.Header.Del(forwardedUserHeader) // only nodes vouch for another user
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

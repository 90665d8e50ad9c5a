package restapi

import (
	"net/http"
	"path"
	"strings"
)

// canonicalPaths answers 400 to a path with dot segments or empty segments
// ("/connectors/../x", "//connectors"), as Kafka Connect's Jetty does,
// instead of net/http's redirect with an HTML body: one path names one
// resource, so a role check or a log line sees the path that is served.
// A trailing slash is dropped ("/connectors/" is "/connectors"), as
// Kafka Connect's Jersey matches it; clients test a connector's existence
// with GET /connectors/{name}/.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p != "" && p != cleanPath(p) {
			writeError(w, Errorf(http.StatusBadRequest, "ambiguous URI path: %q has empty or dot segments; send %q", p, cleanPath(p)))
			return
		}
		if len(p) > 1 && strings.HasSuffix(p, "/") {
			r2 := *r
			u := *r.URL
			u.Path = strings.TrimSuffix(p, "/")
			u.RawPath = strings.TrimSuffix(u.RawPath, "/")
			r2.URL = &u
			r2.RequestURI = u.RequestURI()
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is the form net/http's ServeMux serves: path.Clean, keeping
// a trailing slash.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c
}

package restapi

import (
	"net/http"
	"path"
)

// canonicalPaths answers 400 to a path with dot segments or empty segments
// ("/connectors/../x", "//connectors"), as Kafka Connect's Jetty does,
// instead of net/http's redirect with an HTML body: one path names one
// resource, so a role check or a log line sees the path that is served.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p != "" && p != cleanPath(p) {
			writeError(w, Errorf(http.StatusBadRequest, "ambiguous URI path: %q has empty or dot segments; send %q", p, cleanPath(p)))
			return
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

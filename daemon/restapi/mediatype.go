package restapi

import (
	"mime"
	"net/http"
	"strings"
)

// jsonOnly refuses, with 415 as Kafka Connect does, a write whose body is
// not declared JSON: a Content-Type other than application/json, or a body
// with none. A web page can make a browser send a POST of text/plain, a
// form or an untyped blob to any address without asking the server first
// (a CORS "simple request"); it cannot make it send application/json. The
// raw store API's PUT takes application/octet-stream, which a page cannot
// send unasked either.
func jsonOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		want := "application/json"
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/kcd/v1/store/keys/") {
			want = "application/octet-stream"
		}
		ct := r.Header.Get("Content-Type")
		if ct == "" && r.ContentLength == 0 {
			next.ServeHTTP(w, r) // no body, nothing to declare
			return
		}
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != want {
			writeError(w, jaxrsError(http.StatusUnsupportedMediaType))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// acceptsJSON refuses, with 406 as Kafka Connect's Jersey does, a request
// to one of Kafka Connect's routes whose Accept header admits no JSON
// answer ("text/plain", "application/xml"). Paths no route takes keep
// their 404 or 405, and kcd's own API (/kcd/), whose event stream is not
// JSON, is left to its handlers.
func acceptsJSON(routes *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if accepts := r.Header.Values("Accept"); len(accepts) > 0 && !strings.HasPrefix(r.URL.Path, "/kcd/") && !admitsJSON(accepts) {
			if _, pattern := routes.Handler(r); pattern != "/" && pattern != "" {
				writeError(w, jaxrsError(http.StatusNotAcceptable))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// admitsJSON tells whether Accept header values admit application/json:
// a range "*/*", "*", "application/*" or "application/json", whatever its
// parameters. Like Jersey, it ignores q (even q=0) and ranges it cannot
// parse.
func admitsJSON(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt == "*" || mt == "*/*" || mt == "application/*" || mt == "application/json" {
				return true
			}
		}
	}
	return false
}

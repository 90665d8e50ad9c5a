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

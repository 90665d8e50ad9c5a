package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
)

func TestRetryAfterParsed(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		" 120 ":                         2 * time.Minute,
		"0":                             0,
		"-1":                            0,
		"1.5":                           0,
		"soon":                          0,
		"99999999999999999999":          maxRetryAfter,
		"Fri, 04 Dec 2026 12:00:30 GMT": 30 * time.Second,
		"Fri, 04 Dec 2026 11:00:00 GMT": 0,
		"Sat, 04 Dec 2027 12:00:00 GMT": maxRetryAfter,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

// An error answer's Retry-After reaches APIError; without one it is 0.
func TestAPIErrorCarriesRetryAfter(t *testing.T) {
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if header != "" {
			w.Header().Set("Retry-After", header)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error_code":409,"message":"still tidying up"}`))
	}))
	defer srv.Close()
	c := New(srv.URL)
	for h, want := range map[string]time.Duration{"1": time.Second, "": 0} {
		header = h
		_, err := c.SwitchStore(t.Context(), api.StoreSwitchRequest{Backend: "mysql"})
		var e *APIError
		if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Message != "still tidying up" || e.RetryAfter != want {
			t.Errorf("Retry-After %q: %#v, want RetryAfter %v", h, err, want)
		}
	}
}

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func sse(body string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
}

// The stream yields each event with its type and data, skips comments,
// and ends with io.EOF.
func TestEventsParse(t *testing.T) {
	srv := sse(": kcd events\n\nevent: status\ndata: {\"connector\":\"a\"}\n\n: keep-alive\n\nevent: leader\ndata: {\"leader\":2,\ndata: \"term\":3}\n\n")
	defer srv.Close()
	es, err := New(srv.URL).Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	lines := 0
	var got []string
	for {
		ev, err := es.Next(func() { lines++ })
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+string(ev.Data))
	}
	want := []string{`status {"connector":"a"}`, "leader {\"leader\":2,\n\"term\":3}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	if lines != 11 {
		t.Errorf("alive called %d times, want once per line (11)", lines)
	}
}

// A line longer than MaxEventLine ends the stream with an error instead
// of growing the buffer.
func TestEventsLineBounded(t *testing.T) {
	srv := sse("event: status\ndata: " + strings.Repeat("x", MaxEventLine+10) + "\n\n")
	defer srv.Close()
	es, err := New(srv.URL).Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	if _, err := es.Next(nil); err == nil || err == io.EOF {
		t.Errorf("a %d-byte line: %v, want an error", MaxEventLine+10, err)
	}
}

// An answer that is not an event stream (not a kcd, an error) is refused.
func TestEventsNotAStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/kcd/v1/events" && r.Header.Get("Authorization") == "Bearer s3" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "{}")
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error_code":401,"message":"who are you"}`)
	}))
	defer srv.Close()
	_, err := New(srv.URL).Events(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Message != "who are you" {
		t.Errorf("without a token: %v", err)
	}
	_, err = NewWithOptions(srv.URL, Options{Credentials: Credentials{Token: "s3"}}).Events(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not an event stream") {
		t.Errorf("a JSON answer: %v", err)
	}
}

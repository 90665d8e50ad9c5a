package daemon

import (
	"net/http"
	"testing"
)

type recordRT struct{ got []string }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Header.Get("Authorization"))
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: req}, nil
}

// A node's calls carry the node secret in place of any Authorization
// header, and leave the caller's request as it was.
func TestAsNodeReplacesAuthorization(t *testing.T) {
	const secret = "kcd-canary-secret-node-0123456789abcdef"
	rec := &recordRT{}
	n := &Node{nodeSecret: []byte(secret)}
	req, _ := http.NewRequest(http.MethodGet, "http://node.invalid/kcd/v1/cluster", nil)
	req.SetBasicAuth("user", "kcd-canary-secret-user-pw")
	before := req.Header.Get("Authorization")
	if _, err := n.asNode(rec).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || rec.got[0] != "Bearer "+secret {
		t.Fatalf("sent Authorization %q, want the node secret", rec.got)
	}
	if req.Header.Get("Authorization") != before {
		t.Fatal("asNode changed the caller's request")
	}
	// Without a node secret, requests go as they are.
	rec.got = nil
	if _, err := (&Node{}).asNode(rec).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if rec.got[0] != before {
		t.Fatalf("without a node secret: %q", rec.got[0])
	}
}

package restapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	kcdapi "github.com/kcd-project/kcd/api"
)

// refusingStoreAdmin refuses every switch with err.
type refusingStoreAdmin struct{ err *Error }

func (a refusingStoreAdmin) Switch(context.Context, kcdapi.StoreSwitchRequest) (kcdapi.StoreSwitch, error) {
	return kcdapi.StoreSwitch{}, a.err
}

func (refusingStoreAdmin) Status(context.Context) (kcdapi.StoreStatus, error) {
	return kcdapi.StoreStatus{Backend: "raft"}, nil
}

// followingCluster is a follower whose leader serves REST at leader.
type followingCluster struct {
	staticCluster
	leader string
}

func (c followingCluster) Leader() (bool, string) { return false, c.leader }

// A transient refusal carries Retry-After, on the leader and relayed by a
// follower; a refusal without one has none. The body keeps Kafka
// Connect's error shape either way.
func TestStoreSwitchRefusalRetryAfter(t *testing.T) {
	post := func(h http.Handler, hops string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/kcd/v1/store/switch", strings.NewReader(`{"backend":"mysql"}`))
		req.Header.Set("Content-Type", "application/json")
		if hops != "" {
			req.Header.Set(forwardedHeader, hops)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	check := func(what string, rec *httptest.ResponseRecorder, msg, retryAfter string) {
		t.Helper()
		var em ErrorMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &em); err != nil || rec.Code != http.StatusConflict || em.ErrorCode != http.StatusConflict || !strings.Contains(em.Message, msg) {
			t.Errorf("%s: HTTP %d %s; want 409 with %q", what, rec.Code, rec.Body, msg)
		}
		if got := rec.Header().Get("Retry-After"); got != retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", what, got, retryAfter)
		}
	}
	for _, tc := range []struct {
		err        *Error
		retryAfter string
	}{
		{&Error{Status: http.StatusConflict, Message: "the new leader is still tidying up", RetryAfter: 1}, "1"},
		{Errorf(http.StatusConflict, "a store switch is already running"), ""},
	} {
		leader := httptest.NewServer(NewHandler(&fakeNode{ready: true}, Options{Cluster: leadingCluster{}, StoreAdmin: refusingStoreAdmin{tc.err}}))
		check("leader", post(leader.Config.Handler, ""), tc.err.Message, tc.retryAfter)
		follower := NewHandler(&fakeNode{ready: true}, Options{Cluster: followingCluster{leader: leader.URL}, StoreAdmin: refusingStoreAdmin{tc.err}})
		check("through a follower", post(follower, ""), tc.err.Message, tc.retryAfter)
		leader.Close()
	}

	// A request forwarded as often as allowed meets leadership on the move:
	// transient too.
	follower := NewHandler(&fakeNode{ready: true}, Options{Cluster: followingCluster{leader: "http://127.0.0.1:1"}, StoreAdmin: refusingStoreAdmin{}})
	check("forwarded too often", post(follower, strconv.Itoa(maxForwardHops)), "leadership change", "1")
}

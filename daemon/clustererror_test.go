package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/raft"
)

// Raft's refusals of a cluster change the caller got wrong are 4xx, never
// 500; its own failures stay errors (500).
func TestClusterErrorStatuses(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
	}{
		{errors.New("raft: 7 is not a voter"), http.StatusConflict},
		{errors.New("raft: 7 is not a learner"), http.StatusConflict},
		{errors.New("raft: member 2 has a corruption alarm and must not lead"), http.StatusConflict},
		{errors.New("raft: no other voter to transfer leadership to"), http.StatusConflict},
		{errors.New("raft: no member 9"), http.StatusNotFound},
		{errors.New("raft: cannot remove the last voter"), http.StatusConflict},
		{fmt.Errorf("promote: %w", raft.ErrNotLeader), http.StatusServiceUnavailable},
		{errors.New("disk on fire"), 0},
	} {
		var e *restapi.Error
		err := clusterError(tc.err)
		errors.As(err, &e)
		if (tc.status == 0 && e != nil) || (tc.status != 0 && (e == nil || e.Status != tc.status)) {
			t.Errorf("%v: %v", tc.err, err)
		}
	}
}

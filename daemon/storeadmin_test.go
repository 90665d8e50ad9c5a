package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/kcd-project/kcd/daemon/store/activestore"
	"github.com/kcd-project/kcd/store"
)

// The refusals that pass by themselves (a new leader tidying up,
// leadership moving) are 409 with Retry-After; a running switch is 409
// without it; a wrong request is 400.
func TestSwitchErrorStatuses(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter int
	}{
		{activestore.ErrTidying, http.StatusConflict, 1},
		{activestore.ErrNotLeader, http.StatusConflict, 1},
		{activestore.ErrSwitchRunning, http.StatusConflict, 0},
		{fmt.Errorf("%w: unknown backend", store.ErrInvalid), http.StatusBadRequest, 0},
		{activestore.ErrTargetHeld, http.StatusBadRequest, 0},
		{errors.New("disk on fire"), http.StatusBadRequest, 0},
	} {
		e := switchError(tc.err)
		if e.Status != tc.status || e.RetryAfter != tc.retryAfter {
			t.Errorf("%v: %d, Retry-After %d; want %d, %d", tc.err, e.Status, e.RetryAfter, tc.status, tc.retryAfter)
		}
	}
}

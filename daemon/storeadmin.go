package daemon

import (
	"context"
	"errors"
	"net/http"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/store/activestore"
	"github.com/kcd-project/kcd/store"
)

// storeAdmin serves the store switch and status endpoints from the
// node's active store, with the API's statuses.
type storeAdmin struct{ s *activestore.Store }

func (a storeAdmin) Switch(ctx context.Context, req api.StoreSwitchRequest) (api.StoreSwitch, error) {
	sw, err := a.s.Switch(ctx, req)
	if err != nil {
		return sw, switchError(err)
	}
	return sw, nil
}

// switchError is the answer to a refused switch. The refusals that pass
// by themselves (a new leader tidying up, leadership moving) are 409 with
// Retry-After, so that clients wait them out; a running switch is 409
// without it: the user waits for that switch or looks at it.
func switchError(err error) *restapi.Error {
	switch {
	case errors.Is(err, store.ErrInvalid):
		return restapi.Errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, activestore.ErrTidying):
		return retryAfter(restapi.Errorf(http.StatusConflict, "%v", err))
	case errors.Is(err, activestore.ErrSwitchRunning):
		return restapi.Errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, activestore.ErrNotLeader):
		return retryAfter(restapi.Errorf(http.StatusConflict, "Cannot complete request because of a conflicting operation (e.g. leadership change): %v", err))
	}
	return restapi.Errorf(http.StatusBadRequest, "%v", err)
}

// switchRetryAfter is the Retry-After of a transient refusal, in seconds.
const switchRetryAfter = 1

func retryAfter(e *restapi.Error) *restapi.Error {
	e.RetryAfter = switchRetryAfter
	return e
}

func (a storeAdmin) Status(ctx context.Context) (api.StoreStatus, error) {
	return a.s.Status(ctx), nil
}

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
	switch {
	case err == nil:
		return sw, nil
	case errors.Is(err, store.ErrInvalid):
		return sw, restapi.Errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, activestore.ErrSwitchRunning):
		return sw, restapi.Errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, activestore.ErrNotLeader):
		return sw, restapi.Errorf(http.StatusConflict, "Cannot complete request because of a conflicting operation (e.g. leadership change): %v", err)
	}
	return sw, restapi.Errorf(http.StatusBadRequest, "%v", err)
}

func (a storeAdmin) Status(ctx context.Context) (api.StoreStatus, error) {
	return a.s.Status(ctx), nil
}

package restapi

import (
	"context"
	"net/http"

	kcdapi "github.com/kcd-project/kcd/api"
)

// StoreAdmin switches the cluster's metadata backend and reports on it;
// the Raft leader serves it (daemon/store/activestore). Its errors are
// *Error values with the status to answer.
type StoreAdmin interface {
	Switch(ctx context.Context, req kcdapi.StoreSwitchRequest) (kcdapi.StoreSwitch, error)
	Status(ctx context.Context) (kcdapi.StoreStatus, error)
}

func (a *api) storeAdminRoutes() []route {
	return []route{
		{"POST", "/kcd/v1/store/switch", a.withCluster(a.leaderOnly(a.storeSwitch))},
		{"GET", "/kcd/v1/store/status", a.withCluster(a.leaderOnly(a.storeStatus))},
	}
}

func (a *api) needStoreAdmin() *Error {
	if a.storeAdmin == nil {
		return Errorf(http.StatusServiceUnavailable, "this node does not manage the metadata store; ask a Raft node")
	}
	return nil
}

func (a *api) storeSwitch(r *http.Request) (int, any, *Error) {
	if e := a.needStoreAdmin(); e != nil {
		return 0, nil, e
	}
	var req kcdapi.StoreSwitchRequest
	if e := decodeBody(r, &req); e != nil {
		return 0, nil, e
	}
	sw, err := a.storeAdmin.Switch(r.Context(), req)
	if err != nil {
		return 0, nil, asError(err)
	}
	if sw.State == kcdapi.SwitchDryRun {
		return http.StatusOK, sw, nil
	}
	return http.StatusAccepted, sw, nil
}

func (a *api) storeStatus(r *http.Request) (int, any, *Error) {
	if e := a.needStoreAdmin(); e != nil {
		return 0, nil, e
	}
	st, err := a.storeAdmin.Status(r.Context())
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, st, nil
}

package daemon

import (
	"context"
	"errors"
	"net/http"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/importer"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/store"
)

// importAdmin serves /kcd/v1/imports from the leader's importer, with the
// API's statuses.
type importAdmin struct{ im *importer.Importer }

func importError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, importer.ErrInvalid), errors.Is(err, store.ErrInvalid):
		return restapi.Errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, importer.ErrConflict):
		return restapi.Errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, importer.ErrNotFound):
		return restapi.Errorf(http.StatusNotFound, "%v", err)
	}
	return err
}

func (a importAdmin) Import(ctx context.Context, req api.ImportRequest) (api.Import, error) {
	im, err := a.im.Import(ctx, req)
	return im, importError(err)
}

func (a importAdmin) ImportOffsets(ctx context.Context, id string, offs api.ImportOffsets) (api.Import, error) {
	im, err := a.im.ImportOffsets(ctx, id, offs)
	return im, importError(err)
}

func (a importAdmin) Commit(ctx context.Context, id string) (api.Import, error) {
	im, err := a.im.Commit(ctx, id)
	return im, importError(err)
}

func (a importAdmin) Abort(ctx context.Context, id string) (api.Import, error) {
	im, err := a.im.Abort(ctx, id)
	return im, importError(err)
}

func (a importAdmin) Get(ctx context.Context, id string) (api.Import, error) {
	im, err := a.im.Get(ctx, id)
	return im, importError(err)
}

func (a importAdmin) List(ctx context.Context) ([]api.Import, error) {
	ims, err := a.im.List(ctx)
	return ims, importError(err)
}

package restapi

import (
	"net/http"

	"github.com/kcd-project/kcd/daemon/herder"
)

// GET /connectors/{name}/offsets.
func (a *api) getOffsets(r *http.Request) (int, any, *Error) {
	offs, err := a.connect.Offsets(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, offs, nil
}

// PATCH /connectors/{name}/offsets: 200 with a message; the connector must
// be stopped.
func (a *api) alterOffsets(r *http.Request) (int, any, *Error) {
	var body herder.ConnectorOffsets
	if e := decodeBodyNumbers(r, &body); e != nil {
		return 0, nil, e
	}
	msg, err := a.connect.AlterOffsets(r.Context(), r.PathValue("name"), body.Offsets)
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, msg, nil
}

// DELETE /connectors/{name}/offsets: 200 with a message; the connector
// must be stopped.
func (a *api) resetOffsets(r *http.Request) (int, any, *Error) {
	msg, err := a.connect.ResetOffsets(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, msg, nil
}

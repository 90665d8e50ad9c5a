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

// GET /connectors/{name}/topics: the topics the connector's tasks used
// since the last reset; a connector that does not exist has none, as in
// Kafka Connect.
func (a *api) getTopics(r *http.Request) (int, any, *Error) {
	topics, err := a.connect.Topics(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, topics, nil
}

// PUT /connectors/{name}/topics/reset: 202.
func (a *api) resetTopics(r *http.Request) (int, any, *Error) {
	if err := a.connect.ResetTopics(r.Context(), r.PathValue("name")); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusAccepted, nil, nil
}

package restapi

import "net/http"

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

package restapi

import (
	"net/http"
	"strconv"
)

// GET /connectors/{name}/status.
func (a *api) connectorStatus(r *http.Request) (int, any, *Error) {
	st, err := a.connect.Status(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, st, nil
}

// GET /connectors/{name}/tasks.
func (a *api) listTasks(r *http.Request) (int, any, *Error) {
	tasks, err := a.connect.Tasks(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, tasks, nil
}

// taskID reads the {task} path segment; like Kafka Connect's JAX-RS
// binding, a segment that is not an int is an unknown path.
func taskID(r *http.Request) (int, *Error) {
	id, err := strconv.ParseInt(r.PathValue("task"), 10, 32)
	if err != nil {
		return 0, jaxrsError(http.StatusNotFound)
	}
	return int(id), nil
}

// GET /connectors/{name}/tasks/{task}/status.
func (a *api) taskStatus(r *http.Request) (int, any, *Error) {
	id, e := taskID(r)
	if e != nil {
		return 0, nil, e
	}
	st, err := a.connect.TaskStatus(r.Context(), r.PathValue("name"), id)
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, st, nil
}

// POST /connectors/{name}/tasks/{task}/restart: 204.
func (a *api) restartTask(r *http.Request) (int, any, *Error) {
	id, e := taskID(r)
	if e != nil {
		return 0, nil, e
	}
	if err := a.connect.RestartTask(r.Context(), r.PathValue("name"), id); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusNoContent, nil, nil
}

// POST /connectors/{name}/restart?includeTasks=&onlyFailed=: 204 for the
// connector alone, else 202 with the status showing what restarts.
func (a *api) restartConnector(r *http.Request) (int, any, *Error) {
	q := r.URL.Query()
	plan, err := a.connect.Restart(r.Context(), r.PathValue("name"), javaBool(q.Get("includeTasks")), javaBool(q.Get("onlyFailed")))
	if err != nil {
		return 0, nil, connectError(err)
	}
	if plan == nil {
		return http.StatusNoContent, nil, nil
	}
	return http.StatusAccepted, plan, nil
}

// PUT /connectors/{name}/pause: 202.
func (a *api) pauseConnector(r *http.Request) (int, any, *Error) {
	if err := a.connect.Pause(r.Context(), r.PathValue("name")); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusAccepted, nil, nil
}

// PUT /connectors/{name}/resume: 202.
func (a *api) resumeConnector(r *http.Request) (int, any, *Error) {
	if err := a.connect.Resume(r.Context(), r.PathValue("name")); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusAccepted, nil, nil
}

// PUT /connectors/{name}/stop: 204.
func (a *api) stopConnector(r *http.Request) (int, any, *Error) {
	if err := a.connect.Stop(r.Context(), r.PathValue("name")); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusNoContent, nil, nil
}

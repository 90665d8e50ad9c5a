package restapi

import (
	"errors"
	"net/http"
	"slices"
	"unicode/utf8"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
)

// CreateConnectorRequest is the body of POST /connectors (see package
// api).
type CreateConnectorRequest = kcdapi.CreateConnectorRequest

// GET /connectors, with ?expand=status and ?expand=info (repeatable):
// names, or a map of name to the expansions asked for. A connector that
// disappears (or has no status yet) while the list is built is left out,
// as in Kafka Connect.
func (a *api) listConnectors(r *http.Request) (int, any, *Error) {
	names, err := a.connect.Connectors(r.Context())
	if err != nil {
		return 0, nil, connectError(err)
	}
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		return http.StatusOK, names, nil
	}
	out := make(map[string]map[string]any, len(names))
	for _, name := range names {
		entry, err := a.expandConnector(r, name, expand)
		if errors.Is(err, herder.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, nil, connectError(err)
		}
		out[name] = entry
	}
	return http.StatusOK, out, nil
}

func (a *api) expandConnector(r *http.Request, name string, expand []string) (map[string]any, error) {
	entry := map[string]any{}
	if slices.Contains(expand, "status") {
		st, err := a.connect.Status(r.Context(), name)
		if err != nil {
			return nil, err
		}
		entry["status"] = st
	}
	if slices.Contains(expand, "info") {
		info, err := a.connect.ConnectorInfo(r.Context(), name)
		if err != nil {
			return nil, err
		}
		entry["info"] = info
	}
	return entry, nil
}

// POST /connectors: 201 with Location and the new connector.
func (a *api) createConnector(r *http.Request) (int, any, *Error) {
	var req CreateConnectorRequest
	if e := decodeBody(r, &req); e != nil {
		return 0, nil, e
	}
	name := ""
	if !utf8.Valid(req.Name) {
		// Decoding would turn the bad bytes into U+FFFD: a connector
		// nobody could address by the name they gave.
		return 0, nil, Errorf(http.StatusBadRequest, "name: a connector name must be valid UTF-8")
	}
	if s, err := scalarString(req.Name); err != nil {
		return 0, nil, Errorf(http.StatusBadRequest, "name: %v", err)
	} else if s != nil {
		name = javaTrim(*s)
	}
	config, e := configOf(req.Config)
	if e != nil {
		return 0, nil, e
	}
	target := connectstore.TargetStarted
	if req.InitialState != nil {
		t, ok := herder.ParseInitialState(*req.InitialState)
		if !ok {
			return 0, nil, Errorf(http.StatusBadRequest, "initial_state %q is not one of RUNNING, PAUSED or STOPPED", *req.InitialState)
		}
		target = t
	}
	if e := checkName(name, config); e != nil {
		return 0, nil, e
	}
	info, err := a.connect.CreateConnector(r.Context(), name, config, target)
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusCreated, withHeader{header: location(r, name), body: info}, nil
}

// GET /connectors/{name}.
func (a *api) getConnector(r *http.Request) (int, any, *Error) {
	info, err := a.connect.ConnectorInfo(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, info, nil
}

// DELETE /connectors/{name}: 204.
func (a *api) deleteConnector(r *http.Request) (int, any, *Error) {
	if err := a.connect.DeleteConnector(r.Context(), r.PathValue("name")); err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusNoContent, nil, nil
}

// GET /connectors/{name}/config.
func (a *api) getConfig(r *http.Request) (int, any, *Error) {
	cfg, err := a.connect.Config(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, cfg, nil
}

// PUT /connectors/{name}/config: 201 with Location when it created the
// connector, 200 when it updated it.
func (a *api) putConfig(r *http.Request) (int, any, *Error) {
	name := r.PathValue("name")
	config, e := decodeConfig(r)
	if e != nil {
		return 0, nil, e
	}
	if e := checkName(name, config); e != nil {
		return 0, nil, e
	}
	info, created, err := a.connect.PutConfig(r.Context(), name, config)
	if err != nil {
		return 0, nil, connectError(err)
	}
	if created {
		return http.StatusCreated, withHeader{header: location(r, name), body: info}, nil
	}
	return http.StatusOK, info, nil
}

// PATCH /connectors/{name}/config: a null value removes the setting.
// Unlike Kafka Connect (which stores it), a name other than the
// connector's is refused, as PUT does.
func (a *api) patchConfig(r *http.Request) (int, any, *Error) {
	name := r.PathValue("name")
	patch, e := decodeConfig(r)
	if e != nil {
		return 0, nil, e
	}
	if _, ok := patch["name"]; ok {
		if e := checkName(name, patch); e != nil {
			return 0, nil, e
		}
	}
	info, err := a.connect.PatchConfig(r.Context(), name, patch)
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, info, nil
}

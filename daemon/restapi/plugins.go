package restapi

import (
	"net/http"
)

// GET /connector-plugins?connectorsOnly=: connectors only unless
// connectorsOnly is given and is not "true" (Java's Boolean.parseBoolean).
func (a *api) listPlugins(r *http.Request) (int, any, *Error) {
	connectorsOnly := true
	if v, ok := r.URL.Query()["connectorsOnly"]; ok {
		connectorsOnly = javaBool(v[0])
	}
	return http.StatusOK, a.connect.Plugins(connectorsOnly), nil
}

// GET /connector-plugins/{plugin}/config?version=.
func (a *api) pluginConfig(r *http.Request) (int, any, *Error) {
	keys, err := a.connect.PluginConfig(r.PathValue("plugin"), r.URL.Query().Get("version"))
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, keys, nil
}

// PUT /connector-plugins/{plugin}/config/validate: 200 with the checked
// settings, errors included.
func (a *api) validateConfig(r *http.Request) (int, any, *Error) {
	config, e := decodeConfig(r)
	if e != nil {
		return 0, nil, e
	}
	infos, err := a.connect.ValidateConfig(r.PathValue("plugin"), config)
	if err != nil {
		return 0, nil, connectError(err)
	}
	return http.StatusOK, infos, nil
}

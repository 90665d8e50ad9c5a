package restapi

import (
	"context"
	"encoding/json"
	"net/http"

	kcdapi "github.com/kcd-project/kcd/api"
)

// Loggers is what the API needs to read and set the node's log levels
// (Kafka Connect's /admin/loggers over kcd's subsystems).
type Loggers interface {
	// All returns every logger's level, root included.
	All() map[string]kcdapi.LoggerLevel
	// Level returns one logger's level; false when there is no such logger.
	Level(name string) (kcdapi.LoggerLevel, bool)
	// Set sets a logger's level (one of api.LogLevels) on this node and
	// returns the loggers it changed; false when there is no such logger.
	Set(name, level string) ([]string, bool)
	// SetCluster stores a logger's level for every node, which each
	// applies, those that join later included; it returns once this node
	// applied it, or the store took it and ctx ended.
	SetCluster(ctx context.Context, name, level string) error
}

func (a *api) loggerRoutes() []route {
	return []route{
		{"GET", "/admin/loggers", a.withLoggers(a.listLoggers)},
		{"GET", "/admin/loggers/{logger}", a.withLoggers(a.getLogger)},
		{"PUT", "/admin/loggers/{logger}", a.withLoggers(a.setLogger)},
	}
}

func (a *api) withLoggers(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.loggers == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node does not serve its loggers")
		}
		return fn(r)
	}
}

func (a *api) listLoggers(*http.Request) (int, any, *Error) {
	return http.StatusOK, a.loggers.All(), nil
}

func (a *api) getLogger(r *http.Request) (int, any, *Error) {
	name := r.PathValue("logger")
	l, ok := a.loggers.Level(name)
	if !ok {
		return 0, nil, loggerNotFound(name)
	}
	return http.StatusOK, l, nil
}

// loggerNotFound is Kafka Connect's answer for an unknown logger.
func loggerNotFound(name string) *Error {
	return Errorf(http.StatusNotFound, "Logger %s not found.", name)
}

// setLogger is PUT /admin/loggers/{logger}?scope=worker|cluster. As in
// Kafka Connect an unknown scope means worker and the body may hold other
// keys; unlike it an invalid level is a 400, not a 404 (which says the
// logger is unknown), and so is a logger kcd does not have.
func (a *api) setLogger(r *http.Request) (int, any, *Error) {
	name := r.PathValue("logger")
	var body map[string]json.RawMessage
	if e := decodeBody(r, &body); e != nil {
		return 0, nil, e
	}
	raw, ok := body["level"]
	var level string
	if ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &level); err != nil {
			return 0, nil, Errorf(http.StatusBadRequest, "level must be a string, one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF")
		}
	}
	if level == "" {
		return 0, nil, Errorf(http.StatusBadRequest, "Desired 'level' parameter was not specified in request.")
	}
	level, err := kcdapi.ParseLogLevel(level)
	if err != nil {
		return 0, nil, Errorf(http.StatusBadRequest, "%s", err.Error())
	}
	if _, ok := a.loggers.Level(name); !ok {
		return 0, nil, loggerNotFound(name)
	}
	scope := r.URL.Query().Get("scope")
	switch scope {
	case kcdapi.ScopeCluster:
		if err := a.loggers.SetCluster(r.Context(), name, level); err != nil {
			return 0, nil, storeError(err)
		}
		return http.StatusNoContent, nil, nil
	case "", kcdapi.ScopeWorker:
	default:
		a.log.Warn("unknown logger scope; using worker", "scope", scope, "logger", name)
	}
	changed, ok := a.loggers.Set(name, level)
	if !ok {
		return 0, nil, loggerNotFound(name)
	}
	return http.StatusOK, changed, nil
}

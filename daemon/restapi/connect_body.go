package restapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kcd-project/kcd/daemon/herder"
)

// Helpers of the connector endpoints: request bodies as Kafka Connect reads
// them, and the herder's errors as Kafka Connect answers them.

// withHeader is a route's body with response headers to add (the Location
// of a created connector); wrap sends the headers and then body.
type withHeader struct {
	header http.Header
	body   any
}

func (a *api) withConnect(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if a.connect == nil {
			return 0, nil, Errorf(http.StatusServiceUnavailable, "this node does not serve connectors: it has no metadata store")
		}
		return fn(r)
	}
}

// connectError answers an error of the herder with Kafka Connect's status.
func connectError(err error) *Error {
	switch {
	case errors.Is(err, herder.ErrNotFound):
		return Errorf(http.StatusNotFound, "%s", err.Error())
	case errors.Is(err, herder.ErrAlreadyExists), errors.Is(err, herder.ErrConflict):
		return Errorf(http.StatusConflict, "%s", err.Error())
	case errors.Is(err, herder.ErrBadRequest):
		return Errorf(http.StatusBadRequest, "%s", err.Error())
	case errors.Is(err, herder.ErrForbidden):
		return Errorf(http.StatusForbidden, "%s", err.Error())
	}
	return storeError(err)
}

// decodeConfig reads a JSON object of connector settings. Numbers and
// booleans become their text and null stays null, as Kafka Connect's
// Jackson mapping to Map<String, String> does; objects and arrays are
// refused.
func decodeConfig(r *http.Request) (herder.Config, *Error) {
	var raw map[string]json.RawMessage
	if e := decodeBody(r, &raw); e != nil {
		return nil, e
	}
	if raw == nil {
		return nil, Errorf(http.StatusBadRequest, "request body must be a JSON object of connector settings, not null")
	}
	return configOf(raw)
}

func configOf(raw map[string]json.RawMessage) (herder.Config, *Error) {
	cfg := make(herder.Config, len(raw))
	for k, v := range raw {
		s, err := scalarString(v)
		if err != nil {
			return nil, Errorf(http.StatusBadRequest, "setting %q: %v", k, err)
		}
		cfg[k] = s
	}
	return cfg, nil
}

// scalarString is a JSON scalar as text: a string's value, a number's or
// boolean's literal; nil for null.
func scalarString(v json.RawMessage) (*string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil, nil
	}
	switch v[0] {
	case 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("bad string: %w", err)
		}
		return &s, nil
	case '{', '[':
		return nil, errors.New("a value must be a string, number, boolean or null, not an object or array")
	}
	s := string(v)
	return &s, nil
}

// decodeBodyNumbers is decodeBody keeping numbers exact (json.Number), for
// offsets.
func decodeBodyNumbers(r *http.Request, v any) *Error {
	body, e := limitBody(r)
	if e != nil {
		return e
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	return nil
}

// javaTrim is Java's String.trim, which Kafka Connect applies to the name
// of a new connector: it removes every char up to ' ' at both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// javaBool is Java's Boolean.parseBoolean, used for query parameters.
func javaBool(s string) bool { return strings.EqualFold(s, "true") }

// location is the URL of a connector, for the Location header.
func location(r *http.Request, name string) http.Header {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return http.Header{"Location": {scheme + "://" + r.Host + "/connectors/" + url.PathEscape(name)}}
}

// checkName is Kafka Connect's check that a config's name matches the
// connector's; it then sets the name in config.
func checkName(name string, config herder.Config) *Error {
	if v, ok := config["name"]; ok && (v == nil || *v != name) {
		given := "null"
		if v != nil {
			given = *v
		}
		return Errorf(http.StatusBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", given, name)
	}
	config["name"] = &name
	return nil
}

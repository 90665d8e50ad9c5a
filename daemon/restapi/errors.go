package restapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	kcdapi "github.com/kcd-project/kcd/api"
)

// ErrorMessage is Kafka Connect's error body (see package api).
type ErrorMessage = kcdapi.ErrorMessage

// Error is an error that carries the HTTP status it is answered with.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// writeJSON answers with status and v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(ErrorMessage{ErrorCode: status, Message: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with Kafka Connect's error body.
func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, ErrorMessage{ErrorCode: e.Status, Message: e.Message})
}

// jaxrsError is the message Kafka Connect's JAX-RS layer gives for a status it
// raises itself (unknown path, wrong method): "HTTP 404 Not Found".
func jaxrsError(status int) *Error {
	return Errorf(status, "HTTP %d %s", status, http.StatusText(status))
}

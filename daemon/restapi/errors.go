package restapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	kcdapi "github.com/kcd-project/kcd/api"
)

// ErrorMessage is Kafka Connect's error body (see package api).
type ErrorMessage = kcdapi.ErrorMessage

// Error is an error that carries the HTTP status it is answered with.
type Error struct {
	Status  int
	Message string
	// RetryAfter, when positive, is sent as the Retry-After header
	// (seconds): the refusal is transient and the request may be repeated
	// as it is after that long.
	RetryAfter int
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

// writeError answers with Kafka Connect's error body, and Retry-After
// when e has one.
func writeError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, ErrorMessage{ErrorCode: e.Status, Message: e.Message})
}

// jaxrsError is the message Kafka Connect's JAX-RS layer gives for a status it
// raises itself (unknown path, wrong method): "HTTP 404 Not Found".
func jaxrsError(status int) *Error {
	return Errorf(status, "HTTP %d %s", status, http.StatusText(status))
}

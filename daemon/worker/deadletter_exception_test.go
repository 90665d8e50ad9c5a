package worker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
)

// javaException is a Java plugin's exception as the Java host reports it.
type javaException struct{ class, msg, stack string }

func (e *javaException) Error() string            { return e.stack }
func (e *javaException) ExceptionClass() string   { return e.class }
func (e *javaException) ExceptionMessage() string { return e.msg }
func (e *javaException) ExceptionStack() string   { return e.stack }

var _ connect.ExceptionError = (*javaException)(nil)

// A Java plugin's exception reaches the dead letter queue's headers with
// its own class, message and stack trace, as Kafka Connect labels it; a Go
// error is still a ConnectException.
func TestContextHeadersJavaException(t *testing.T) {
	const p = "__connect.errors."
	rec := &kgo.Record{Topic: "in", Partition: 2, Offset: 7}
	id := TaskID{Connector: "c", Task: 1}
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "[hidden]") }
	headers := func(cause error) map[string]string {
		hs := map[string]string{}
		for _, h := range contextHeaders(rec, id, stageTaskPut, "io.example.Sink", cause, mask) {
			hs[h.Key] = string(h.Value)
		}
		return hs
	}

	je := &javaException{class: "org.apache.kafka.connect.errors.DataException", msg: "bad field s3cret",
		stack: "org.apache.kafka.connect.errors.DataException: bad field s3cret\n\tat io.example.Sink.put(Sink.java:12)\n"}
	for _, cause := range []error{je, fmt.Errorf("put: %w", je), &stageError{stage: stageTaskPut, class: "x", err: je}} {
		hs := headers(cause)
		if got := hs[p+"exception.class.name"]; got != je.class {
			t.Errorf("%T: exception class %q, want %q", cause, got, je.class)
		}
		if got := hs[p+"exception.message"]; got != "bad field [hidden]" {
			t.Errorf("%T: exception message %q", cause, got)
		}
		if got := hs[p+"exception.stacktrace"]; got != mask(je.stack) {
			t.Errorf("%T: stack trace %q", cause, got)
		}
	}

	hs := headers(errors.New("cannot write"))
	if hs[p+"exception.class.name"] != "org.apache.kafka.connect.errors.ConnectException" ||
		hs[p+"exception.message"] != "cannot write" ||
		!strings.HasPrefix(hs[p+"exception.stacktrace"], "org.apache.kafka.connect.errors.ConnectException: cannot write") {
		t.Errorf("a Go error's headers: %q", hs)
	}
}

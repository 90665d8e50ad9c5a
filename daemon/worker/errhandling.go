package worker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// The stages of Kafka Connect's error handling (ErrorHandlingStage), as
// the dead letter queue's __connect.errors.stage header names them.
const (
	stageKeyConverter    = "KEY_CONVERTER"
	stageValueConverter  = "VALUE_CONVERTER"
	stageHeaderConverter = "HEADER_CONVERTER"
	stageTaskPut         = "TASK_PUT" // what Kafka Connect's ErrantRecordReporter sends
	stageTransformation  = "TRANSFORMATION"
)

// stageError is an error of one stage of a record's processing, with the
// class (Kafka Connect's name) that failed: the dead letter queue's
// context headers tell both.
type stageError struct {
	stage, class string
	err          error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// stageOf returns the stage and class an error names, or stage and class
// when it names none.
func stageOf(err error, stage, class string) (string, string) {
	if se, ok := errors.AsType[*stageError](err); ok {
		return se.stage, se.class
	}
	return stage, class
}

// exceptionClass names err as Kafka Connect's exception class would: a
// Java exception (the Java host's) by its own class, a conversion error is
// its DataException, a RetriableError its RetriableException, anything
// else a ConnectException.
func exceptionClass(err error) string {
	if je, ok := errors.AsType[connect.ExceptionError](err); ok && je.ExceptionClass() != "" {
		return je.ExceptionClass()
	}
	switch {
	case data.IsDataError(err):
		return "org.apache.kafka.connect.errors.DataException"
	case isRetriable(err):
		return "org.apache.kafka.connect.errors.RetriableException"
	default:
		return "org.apache.kafka.connect.errors.ConnectException"
	}
}

// exceptionMessage is err's message as the exception's getMessage() says
// it: a Java exception's own, or the innermost DataError's, when there is
// one, without kcd's context.
func exceptionMessage(err error) string {
	if je, ok := errors.AsType[connect.ExceptionError](err); ok && je.ExceptionClass() != "" {
		return je.ExceptionMessage()
	}
	if de, ok := errors.AsType[*data.DataError](err); ok {
		return de.Msg
	}
	return err.Error()
}

func isRetriable(err error) bool {
	_, ok := errors.AsType[*connect.RetriableError](err)
	return ok
}

// retryDelayMin is the first wait of Kafka Connect's
// RetryWithToleranceOperator; it doubles up to errors.retry.delay.max.ms.
const retryDelayMin = 300 * time.Millisecond

// retrying retries op, a stage of a record's processing whose first
// attempt failed with err, as Kafka Connect's RetryWithToleranceOperator
// does: an attempt that fails with a RetriableError is tried again while
// errors.retry.timeout has not passed (0, the default: never; -1: without
// end). Every failed attempt after the first counts as a failure and a
// retry. It returns op's last error.
func (tr *taskRun) retrying(err error, op func() error) error {
	t := tr.settings.retryTimeout
	if t == 0 || !isRetriable(err) {
		return err
	}
	deadline := time.Now().Add(t)
	for attempt := 1; ; attempt++ {
		d := min(retryDelayMin<<min(attempt-1, 20), tr.settings.retryMax)
		if t > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return err
			}
			d = min(d, left)
		}
		tr.stats.retries.Add(1)
		if !tr.sleep(d) {
			return err
		}
		if err = op(); err == nil || !isRetriable(err) {
			if err != nil {
				tr.stats.failures.Add(1)
			}
			return err
		}
		tr.stats.failures.Add(1)
	}
}

// recordFailed counts a record whose processing ended in err, and logs it
// when errors.log.enable says so (with its key and value under
// errors.log.include.messages). It returns the error that fails the task
// under errors.tolerance=none, nil when the record is skipped.
func (tr *taskRun) recordFailed(err error, what string, attrs ...any) error {
	tr.stats.failed(tr.settings.tolerateAll)
	if tr.settings.logErrors {
		tr.stats.logged.Add(1)
		tr.log.Warn(what, append(attrs, "err", err)...)
	}
	if !tr.settings.tolerateAll {
		return fmt.Errorf("tolerance exceeded in error handler: %w", err)
	}
	return nil
}

// taskClass names the task class of a connector class as Kafka Connect's
// plugins name theirs: FileStreamSinkConnector's is FileStreamSinkTask.
func taskClass(connectorClass string) string {
	if c, ok := strings.CutSuffix(connectorClass, "Connector"); ok {
		return c + "Task"
	}
	return connectorClass
}

// converterClass is the class name of a converter configured as class,
// which may be an alias of a built-in one.
func converterClass(class string) string {
	switch strings.TrimSpace(class) {
	case "JsonConverter", "Json":
		return "org.apache.kafka.connect.json.JsonConverter"
	case "StringConverter", "String":
		return "org.apache.kafka.connect.storage.StringConverter"
	case "ByteArrayConverter", "ByteArray":
		return "org.apache.kafka.connect.converters.ByteArrayConverter"
	case "", "SimpleHeaderConverter":
		return SimpleHeaderConverter
	}
	return strings.TrimSpace(class)
}

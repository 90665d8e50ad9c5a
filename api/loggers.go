package api

import (
	"fmt"
	"strings"
)

// Kafka Connect's logger endpoints (/admin/loggers, KIP-495 and KIP-976),
// which kcd serves over its subsystems' loggers.

// LoggerLevel is one logger's level: an entry of GET /admin/loggers and
// the body of GET /admin/loggers/{name}.
type LoggerLevel struct {
	Level string `json:"level"`
	// LastModified is when the level was last set through the API, in
	// milliseconds since the epoch; nil while it is the start-up level.
	LastModified *int64 `json:"last_modified"`
}

// LoggerLevelRequest is the body of PUT /admin/loggers/{name}.
type LoggerLevelRequest struct {
	Level string `json:"level"`
}

// RootLogger names the logger that every other follows unless set itself.
const RootLogger = "root"

// Logger scopes of PUT /admin/loggers/{name}?scope=.
const (
	ScopeWorker  = "worker"  // this node only (the default)
	ScopeCluster = "cluster" // every node, now and those that join later
)

// LogLevels are the levels the logger endpoints take, most verbose first,
// as Kafka Connect (log4j) names them.
var LogLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"}

// ParseLogLevel returns level in upper case when it is one of LogLevels
// (case does not matter, as in Kafka Connect).
func ParseLogLevel(level string) (string, error) {
	up := strings.ToUpper(strings.TrimSpace(level))
	for _, l := range LogLevels {
		if up == l {
			return l, nil
		}
	}
	return "", fmt.Errorf("invalid log level %q: use one of %s", level, strings.Join(LogLevels, ", "))
}

package restapi

import (
	"net/http"
	"strings"
)

// HealthCheck is one check of GET /health: it returns what is wrong with
// its part of the node, or nil when nothing is.
type HealthCheck func() *HealthProblem

// HealthProblem is one reason a node is not healthy.
type HealthProblem struct {
	// Starting: the part is still starting up (status "starting");
	// otherwise it failed (status "unhealthy").
	Starting bool
	Message  string
}

// checkHealth runs the checks and combines what they find, in Kafka
// Connect's shape: 200 "healthy" when none finds a problem; otherwise 503,
// "unhealthy" when any part failed and "starting" when parts are only still
// starting, with the messages of every problem, "; "-joined.
func checkHealth(checks []HealthCheck) (int, WorkerStatus) {
	var msgs []string
	starting := true
	for _, c := range checks {
		p := c()
		if p == nil {
			continue
		}
		msgs = append(msgs, p.Message)
		starting = starting && p.Starting
	}
	switch {
	case len(msgs) == 0:
		return http.StatusOK, WorkerStatus{Status: "healthy", Message: healthyMessage}
	case starting:
		return http.StatusServiceUnavailable, WorkerStatus{Status: "starting", Message: strings.Join(msgs, "; ")}
	}
	return http.StatusServiceUnavailable, WorkerStatus{Status: "unhealthy", Message: strings.Join(msgs, "; ")}
}

// readyCheck is the node's own check: it is starting until Ready.
func readyCheck(node Node) HealthCheck {
	return func() *HealthProblem {
		if node.Ready() {
			return nil
		}
		return &HealthProblem{Starting: true, Message: startingMessage}
	}
}

func (a *api) health(*http.Request) (int, any, *Error) {
	status, body := checkHealth(a.healthChecks)
	return status, body, nil
}

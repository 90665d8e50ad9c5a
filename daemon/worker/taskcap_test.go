package worker

import (
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectors/datagen"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// A connector whose tasks.max is above the worker's cap (its config written
// past the REST API's check) fails with the reason instead of building
// that many task configs.
func TestTasksMaxAboveTheCapFailsTheConnector(t *testing.T) {
	e := fakeEnv(t)
	e.start(func(c *Config) { c.MaxTasksPerConnector = 10 })
	e.create("big", map[string]string{"connector.class": datagen.Class, "topic": e.name("big"), "tasks.max": "1000000", "rate.per.task": "1"})
	st := e.waitState("big", -1, connectstore.StateFailed)
	if !strings.Contains(st.Trace, "at most 10 tasks per connector") {
		t.Errorf("trace %q", st.Trace)
	}
	if tc, err := e.cs.Tasks(t.Context(), "big"); err != nil || len(tc.Tasks) != 0 {
		t.Errorf("task configs written: %d %v", len(tc.Tasks), err)
	}
}

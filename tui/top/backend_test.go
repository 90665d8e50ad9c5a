package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
)

// The Backend's actions reach the server: pause and resume change the
// connector's state, restarts are accepted (an unknown task is refused with
// the server's message), offsets come back as JSON text.
func TestClientBackend(t *testing.T) {
	url := startNode(t)
	createDatagen(t, url, "gen", 2)
	c := client.New(url)
	b := ClientBackend{Client: func() *client.Client { return c }}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	state := func(want string) {
		t.Helper()
		waitUntil(t, 15*time.Second, func() (bool, string) {
			st, err := c.ConnectorStatus(ctx, "gen")
			ok := err == nil && st.Connector.State == want && len(st.Tasks) == 2
			for _, tk := range st.Tasks {
				ok = ok && tk.State == want
			}
			return ok, fmt.Sprintf("gen not %s: %+v %v", want, st, err)
		})
	}
	state("RUNNING")
	if err := b.PauseConnector(ctx, "gen"); err != nil {
		t.Fatal(err)
	}
	state("PAUSED")
	if err := b.ResumeConnector(ctx, "gen"); err != nil {
		t.Fatal(err)
	}
	state("RUNNING")
	if err := b.RestartConnector(ctx, "gen", true); err != nil {
		t.Fatal(err)
	}
	if err := b.RestartTask(ctx, "gen", 1); err != nil {
		t.Fatal(err)
	}
	err := b.RestartTask(ctx, "gen", 7)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !strings.Contains(err.Error(), "restart task gen/7") {
		t.Errorf("restart of task 7: %v", err)
	}
	state("RUNNING")
	waitUntil(t, 15*time.Second, func() (bool, string) {
		offs, err := b.Offsets(ctx, "gen")
		if err != nil || len(offs) == 0 {
			return false, fmt.Sprintf("no offsets: %v %v", offs, err)
		}
		for _, o := range offs {
			if !strings.HasPrefix(o.Partition, "{") || !strings.HasPrefix(o.Offset, "{") {
				return false, fmt.Sprintf("offset not JSON text: %+v", o)
			}
		}
		return true, ""
	})
	if _, err := b.Offsets(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "offsets of nope") {
		t.Errorf("offsets of a connector that does not exist: %v", err)
	}
}

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// GET /kcd/v1/events streams what the dashboard follows: the leader, the
// rebalance that places a new connector, and its statuses.
func TestEventStream(t *testing.T) {
	n := New(devConfig(t, t.TempDir()), slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.RESTURL()+"/kcd/v1/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	go func() {
		for ctx.Err() == nil {
			if call(t, "POST", n.RESTURL()+"/connectors", map[string]any{"name": "gen", "config": map[string]string{
				"connector.class": "Datagen", "topic": "gen", "tasks.max": "2", "rate.per.task": "10"}}, nil) == 201 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	seen := map[string]bool{}
	sc := bufio.NewScanner(res.Body)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("event %s: data is not JSON: %v", event, err)
			}
			switch event {
			case "leader":
				if data["leader"] == float64(1) {
					seen["leader"] = true
				}
			case "worker":
				if _, ok := data["id"].(string); !ok {
					t.Fatalf("worker event without an id: %v", data)
				}
			case "rebalance":
				if moves, _ := data["moves"].([]any); len(moves) > 0 {
					seen["rebalance"] = true
				}
			case "status":
				if data["connector"] == "gen" && data["task"] != nil && data["state"] == "RUNNING" {
					seen["status"] = true
				}
			}
		}
		if len(seen) == 3 {
			return
		}
	}
	t.Fatalf("stream ended (%v) having seen only %v", sc.Err(), seen)
}

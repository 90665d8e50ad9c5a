package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestIntegrationProcessCorruptMember: a bit flipped in a value of one
// member's state file (while it was stopped) is found by the members'
// periodic hash comparison: the member's /health answers 503 with the
// alarm, every member's GET /kcd/v1/cluster lists it, the member refuses
// to serve the store, and the other members serve on.
func TestIntegrationProcessCorruptMember(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{ExtraArgs: []string{"--corruption-check-interval", "300ms"}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	const marker = "process-value-to-flip-0123456789"
	for i := range 100 {
		if err := putRetry(ctx, a, c.Nodes(), fmt.Sprintf("corrupt/k%03d", i), fmt.Sprintf("%s-%03d", marker, i)); err != nil {
			t.Fatal(err)
		}
	}
	// Drop the watch history, which holds copies of the values.
	var rev struct {
		Revision int64 `json:"revision"`
	}
	if err := c.Node(lead).GetJSON(ctx, "/kcd/v1/store/revision", &rev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Node(lead).Post(ctx, "/kcd/v1/store/compact", fmt.Appendf(nil, `{"revision":%d}`, rev.Revision)); err != nil {
		t.Fatal(err)
	}

	victim := c.Node(lead%3 + 1)
	if _, _, err := victim.Get(ctx, "corrupt/k099"); err != nil { // caught up
		t.Fatal(err)
	}
	if err := victim.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	flipInLiveLeaf(t, filepath.Join(victim.DataDir, "raft", "state.db"), []byte(marker+"-050"))
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}

	var health struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		_, err := victim.do(ctx, "GET", "/health", nil, &health)
		var se *StatusError
		if errors.As(err, &se) && se.Status == 503 && strings.Contains(se.Body, "unhealthy") {
			health.Message = se.Body
			return true, nil
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the corrupt member's /health never answered 503 unhealthy: %v\n%s", err, victim.LogTail(30))
	}
	t.Logf("corrupt member's /health: %s", health.Message)
	if !strings.Contains(health.Message, "differs from the majority") || !strings.Contains(health.Message, "kcctl cluster remove") {
		t.Errorf("/health of the corrupt member says %s", health.Message)
	}
	if !strings.Contains(victim.RunLog(), "corruption alarm") {
		t.Error("the corrupt member's log does not say \"corruption alarm\"")
	}

	for _, n := range c.Nodes() {
		var info struct {
			Alarms []struct {
				Member  uint64 `json:"member"`
				Message string `json:"message"`
			} `json:"alarms"`
		}
		if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
			err := n.GetJSON(ctx, "/kcd/v1/cluster", &info)
			return err == nil && len(info.Alarms) == 1 && info.Alarms[0].Member == victim.ID, nil
		}); err != nil {
			t.Fatalf("node %d's cluster status does not list the alarm on member %d: %+v", n.ID, victim.ID, info.Alarms)
		}
	}

	if _, _, err := victim.Get(ctx, "corrupt/k050"); err == nil {
		t.Error("the corrupt member serves reads")
	}
	var healthy []*Node
	for _, n := range c.Nodes() {
		if n != victim {
			healthy = append(healthy, n)
		}
	}
	if err := putRetry(ctx, a, healthy, "corrupt/after", "ok"); err != nil {
		t.Fatal(err)
	}
	for _, n := range healthy {
		if v, found, err := n.Get(ctx, "corrupt/k050"); err != nil || !found || v != marker+"-050" {
			t.Errorf("node %d reads corrupt/k050 as %q (found %v, err %v)", n.ID, v, found, err)
		}
		if _, err := n.do(ctx, "GET", "/health", nil, nil); err != nil {
			t.Errorf("healthy node %d: /health: %v", n.ID, err)
		}
	}
}

// flipInLiveLeaf flips the last bit of b where a leaf page in use of the
// bbolt file at path holds it (copies may linger in free pages).
func flipInLiveLeaf(t *testing.T, path string, b []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db") // bbolt writes its free list at Open
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := db.Info().PageSize
	at := -1
	err = db.View(func(tx *bolt.Tx) error {
		for off := 0; at < 0; off += len(b) {
			i := bytes.Index(data[off:], b)
			if i < 0 {
				return fmt.Errorf("no leaf in use holds %q", b)
			}
			off += i
			for id := off / pageSize; id >= 2; id-- {
				p, err := tx.Page(id)
				if err != nil {
					return err
				}
				if p != nil && p.Type != "free" && p.Type != "" {
					if p.Type == "leaf" && (id+p.OverflowCount+1)*pageSize > off {
						at = off
					}
					break
				}
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	data[at+len(b)-1] ^= 0x01
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationProcessImport: three kcd processes on the real Kafka
// broker. An import through a follower brings a started FileStreamSource
// with the offset of line 50 of its file, a started FileStreamSink with
// its topic's offset, and a stopped connector of a class kcd cannot run,
// with its offsets. The connectors, configs, target states and offsets
// are then exactly the imported ones, the export pages give each once,
// and the workers run the source from line 50: the sink's file holds
// lines 50..99, none before. Then an import is staged and the leader is
// killed before its commit: on the new leader the import is still staging,
// its abort leaves no connector and no offset of its names.
func TestIntegrationProcessImport(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{"--offset-flush-interval", "200ms"}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	via := c.Except(lead)[0]
	cl := client.New(via.URL())

	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line-%03d\n", i) // 9 bytes a line
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%x", rand.Uint64())
	topic := "kcd-systemtest-import-" + suffix
	src, snk, stopped := "imp-src-"+suffix, "imp-sink-"+suffix, "imp-jdbc-"+suffix
	req := api.ImportRequest{Connectors: []api.ImportConnector{
		{Name: src, Target: "STARTED", Config: map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": topic, "name": src}},
		{Name: snk, Target: "STARTED", Config: map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic, "name": snk}},
		{Name: stopped, Target: "STOPPED", Config: map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "name": stopped, "connection.password": SecretCanary + "import-" + suffix}},
	}}
	offs := api.ImportOffsets{
		Source: []api.ImportSourceOffset{
			{Connector: src, Partition: map[string]any{"filename": in}, Offset: map[string]any{"position": 50 * 9}},
			{Connector: stopped, Partition: map[string]any{"protocol": "1", "table": "db.orders"}, Offset: map[string]any{"incrementing": 7}},
		},
		Sink: []api.ImportSinkOffset{{Connector: snk, Topic: topic, Partition: 0, Offset: 0}},
	}
	opened := openImport(t, ctx, cl, req)
	if _, err := cl.ImportOffsets(ctx, opened.ID, offs); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := via.GetJSON(ctx, "/connectors", &names); err != nil || slices.Contains(names, src) {
		t.Fatalf("connectors visible while staging: %v %v", names, err)
	}
	done, err := cl.CommitImport(ctx, opened.ID)
	if err != nil || done.State != api.ImportDone {
		t.Fatalf("commit: %+v %v", done, err)
	}

	if err := via.GetJSON(ctx, "/connectors", &names); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{src, snk, stopped} {
		if !slices.Contains(names, n) {
			t.Errorf("connector %s missing: %v", n, names)
		}
	}
	for _, conn := range req.Connectors {
		var cfg map[string]string
		if err := via.GetJSON(ctx, "/connectors/"+conn.Name+"/config", &cfg); err != nil || !mapsEqual(cfg, conn.Config) {
			t.Errorf("config of %s: %v %v", conn.Name, cfg, err)
		}
	}
	var st struct {
		Connector struct{ State string } `json:"connector"`
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		err := via.GetJSON(ctx, "/connectors/"+src+"/status", &st)
		return err == nil && st.Connector.State == "RUNNING", nil
	}); err != nil {
		t.Fatalf("source not running: %+v", st)
	}
	// The source goes on from line 50: the sink writes lines 50..99.
	want := strings.Join(strings.Split(b.String(), "\n")[50:100], "\n") + "\n"
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) { return countLines(out) >= 50, nil }); err != nil {
		t.Fatalf("the sink wrote %d lines", countLines(out))
	}
	if got, _ := os.ReadFile(out); string(got) != want {
		t.Fatalf("the sink's file is not lines 50..99:\n%s", got)
	}
	var so struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err := via.GetJSON(ctx, "/connectors/"+src+"/offsets", &so); err != nil || len(so.Offsets) != 1 || so.Offsets[0].Partition["filename"] != in {
		t.Fatalf("offsets of the source: %+v %v", so, err)
	}

	// The export: every connector once across pages of one, offsets in.
	seen := map[string]api.ExportConnector{}
	after := ""
	for pages := 0; ; pages++ {
		page, err := cl.Export(ctx, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, ec := range page.Connectors {
			if _, dup := seen[ec.Name]; dup {
				t.Fatalf("%s exported twice", ec.Name)
			}
			seen[ec.Name] = ec
		}
		if page.Next == "" || pages > 1000 {
			break
		}
		after = page.Next
	}
	if ec := seen[stopped]; ec.Target != "STOPPED" || len(ec.SourceOffsets) != 1 || fmt.Sprint(ec.SourceOffsets[0].Offset["incrementing"]) != "7" ||
		ec.Config["connection.password"] != SecretCanary+"import-"+suffix {
		t.Errorf("export of the stopped connector: %+v", ec)
	}
	if ec := seen[snk]; ec.Target != "STARTED" || len(ec.SinkOffsets) != 1 || ec.SinkOffsets[0].Topic != topic {
		t.Errorf("export of the sink: %+v", ec)
	}
	if ec := seen[src]; len(ec.SourceOffsets) != 1 || len(ec.Tasks) != 1 {
		t.Errorf("export of the source: %+v", ec)
	}

	// The same import again: unchanged, nothing to do.
	again, err := cl.Import(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range again.Items {
		if it.Action != api.ImportUnchanged {
			t.Errorf("rerun: %+v", it)
		}
	}
	if _, err := cl.CommitImport(ctx, again.ID); err != nil {
		t.Fatal(err)
	}

	// Kill the leader while an import stages.
	killed := []string{"imp-kill-a-" + suffix, "imp-kill-b-" + suffix}
	kreq := api.ImportRequest{}
	koffs := api.ImportOffsets{}
	for _, n := range killed {
		kreq.Connectors = append(kreq.Connectors, api.ImportConnector{Name: n, Target: "STARTED", Config: map[string]string{"connector.class": "FileStreamSink", "file": out + n, "topics": topic}})
		koffs.Sink = append(koffs.Sink, api.ImportSinkOffset{Connector: n, Topic: topic, Offset: 5})
	}
	staging, err := cl.Import(ctx, kreq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ImportOffsets(ctx, staging.ID, koffs); err != nil {
		t.Fatal(err)
	}
	c.Node(lead).Kill()
	rest := c.Except(lead)
	if _, err := WaitLeader(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	cl2 := client.New(rest[1].URL())
	var got api.Import
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		got, err = cl2.GetImport(ctx, staging.ID)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("import on the new leader: %v", err)
	}
	if got.State != api.ImportStaging || got.SinkOffsets != 2 {
		t.Fatalf("import on the new leader: %+v", got)
	}
	if _, err := cl2.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{{Name: "x-" + suffix, Target: "STOPPED", Config: map[string]string{"connector.class": "X"}}}}); !isStatus(err, 409) {
		t.Fatalf("a second import while one stages: %v", err)
	}
	if ab, err := cl2.AbortImport(ctx, staging.ID); err != nil || ab.State != api.ImportAborted {
		t.Fatalf("abort: %+v %v", ab, err)
	}
	for _, n := range killed {
		if code, _ := rest[0].do(ctx, "GET", "/connectors/"+n, nil, nil); code != 404 {
			t.Errorf("connector %s of the aborted import: %d", n, code)
		}
	}
	for _, p := range []string{"connect/", "kcd/imports/data/"} {
		kvs, _, err := rest[0].Scan(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for k := range kvs {
			for _, n := range killed {
				if strings.Contains(k, n) {
					t.Errorf("key %s of the aborted import", k)
				}
			}
			if strings.HasPrefix(k, "kcd/imports/data/"+staging.ID) {
				t.Errorf("staged key %s left", k)
			}
		}
	}
	if _, err := cl2.CommitImport(ctx, staging.ID); !isStatus(err, 409) {
		t.Fatalf("commit of an aborted import: %v", err)
	}
	if _, err := cl2.GetImport(ctx, "no-such-import"); !isStatus(err, 404) {
		t.Fatalf("unknown import: %v", err)
	}
	// No secret in any log.
	for _, n := range c.Nodes() {
		if strings.Contains(n.Log(), SecretCanary+"import-"+suffix) {
			t.Errorf("node %d logged a connector's password", n.ID)
		}
	}
}

// openImport opens an import, retrying while the nodes start (they are
// unreachable or answer 503 without a leader); any other error fails.
func openImport(t *testing.T, ctx context.Context, cl *client.Client, req api.ImportRequest) api.Import {
	t.Helper()
	for {
		opened, err := cl.Import(ctx, req)
		var ue *client.UnreachableError
		switch {
		case err == nil:
			return opened
		case ctx.Err() != nil || !(isStatus(err, 503) || errors.As(err, &ue)):
			t.Fatalf("import: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isStatus(err error, status int) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Status == status
}

func mapsEqual(a, b map[string]string) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestIntegrationProcessImportLeaderKilledAfterCommit: the leader is
// killed (SIGKILL) while it rolls a committed import of many connectors
// forward; the next leader finishes it: every connector ends with its
// offset and the import is done, with nothing left staged.
func TestIntegrationProcessImportLeaderKilledAfterCommit(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := StartCluster(t, bin, Options{Bootstrap: brokers})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	via := c.Except(lead)[0]
	cl := client.New(via.URL())
	const n = 300
	suffix := fmt.Sprintf("%x", rand.Uint64())
	req := api.ImportRequest{}
	offs := api.ImportOffsets{}
	want := map[string]int64{}
	for i := range n {
		name := fmt.Sprintf("imp-many-%s-%04d", suffix, i)
		req.Connectors = append(req.Connectors, api.ImportConnector{Name: name, Target: "STOPPED",
			Config: map[string]string{"connector.class": "org.example.Elsewhere", "topics": "t-" + suffix}})
		offs.Sink = append(offs.Sink, api.ImportSinkOffset{Connector: name, Topic: "t-" + suffix, Partition: int32(i % 3), Offset: int64(1000 + i)})
		want[name] = int64(1000 + i)
	}
	opened := openImport(t, ctx, cl, req)
	if _, err := cl.ImportOffsets(ctx, opened.ID, offs); err != nil {
		t.Fatal(err)
	}
	commitDone := make(chan error, 1)
	go func() {
		_, err := client.New(c.Node(lead).URL()).CommitImport(ctx, opened.ID)
		commitDone <- err
	}()
	// Kill the leader mid-way through the roll-forward: some connectors
	// finished, others still to finish.
	staged := 0
	if err := WaitFor(ctx, 5*time.Millisecond, func() (bool, error) {
		v, found, err := via.Get(ctx, "kcd/imports/journal/"+opened.ID)
		if err != nil || !found || !strings.Contains(v, `"state":"committed"`) {
			return false, nil
		}
		left, _, err := via.Scan(ctx, "kcd/imports/data/"+opened.ID+"/c/")
		staged = len(left)
		return err == nil && staged < n, nil // some connectors finished, some not
	}); err != nil {
		t.Fatalf("the import did not commit: %v", err)
	}
	c.Node(lead).Kill()
	t.Logf("leader killed after the commit with %d of %d connectors still to finish", staged, n)
	if staged == 0 {
		t.Fatal("the roll-forward finished before the kill: nothing tested")
	}
	<-commitDone
	rest := c.Except(lead)
	if _, err := WaitLeader(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	cl2 := client.New(rest[1].URL())
	var got api.Import
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		got, err = cl2.GetImport(ctx, opened.ID)
		return err == nil && got.State == api.ImportDone, nil
	}); err != nil {
		t.Fatalf("the new leader did not finish the import: state %q, %v", got.State, err)
	}
	seen := 0
	after := ""
	for {
		page, err := cl2.Export(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ec := range page.Connectors {
			w, ok := want[ec.Name]
			if !ok {
				continue
			}
			seen++
			if ec.Target != "STOPPED" || len(ec.SinkOffsets) != 1 || ec.SinkOffsets[0].Offset != w {
				t.Fatalf("connector %s after the recovery: %+v", ec.Name, ec)
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if seen != n {
		t.Fatalf("%d of %d connectors exported", seen, n)
	}
	if left, _, err := rest[0].Scan(ctx, "kcd/imports/data/"+opened.ID+"/"); err != nil || len(left) > 0 {
		t.Fatalf("%d staged keys left (%v)", len(left), err)
	}
}

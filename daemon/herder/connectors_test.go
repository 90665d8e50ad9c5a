package herder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

func newHerderStore(t *testing.T) (*herder.Herder, *connectstore.Store) {
	t.Helper()
	herdertest.Register()
	s := herdertest.Store(t)
	return herder.New(s, herder.Options{Logger: slog.New(slog.DiscardHandler)}), s
}

func sourceConfig(name string, kv ...string) herder.Config {
	return cfg(append([]string{"name", name, "connector.class", herdertest.SourceClass, "topic", "t"}, kv...)...)
}

// revision is the store's revision: it moves with every write.
func revision(t *testing.T, s *connectstore.Store) int64 {
	t.Helper()
	rev, err := s.Raw().Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestCreateConnector(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	info, err := h.CreateConnector(ctx, "c1", sourceConfig("c1", "file", "/tmp/x"), connectstore.TargetPaused)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "c1" || info.Type != herder.TypeSource || len(info.Tasks) != 0 || info.Config["file"] != "/tmp/x" {
		t.Errorf("info %+v", info)
	}
	if target, _ := s.Target(ctx, "c1"); target != connectstore.TargetPaused {
		t.Errorf("target %s", target)
	}
	_, err = h.CreateConnector(ctx, "c1", sourceConfig("c1"), connectstore.TargetStarted)
	if !errors.Is(err, herder.ErrAlreadyExists) || err.Error() != "Connector c1 already exists" {
		t.Errorf("second create: %v", err)
	}
	if got, _ := h.Config(ctx, "c1"); got["file"] == nil || *got["file"] != "/tmp/x" {
		t.Errorf("the failed create changed the config: %v", got)
	}
}

func TestRejectedWritesStoreNothing(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "keep", sourceConfig("keep", "batch.size", "10"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	before := revision(t, s)
	for _, c := range []struct {
		what string
		do   func() error
		msg  string
	}{
		{"unknown class", func() error {
			_, err := h.CreateConnector(ctx, "x", cfg("name", "x", "connector.class", "Nope"), connectstore.TargetStarted)
			return err
		}, "org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector and which name matches Nope"},
		{"no class", func() error {
			_, err := h.CreateConnector(ctx, "x", cfg("name", "x"), connectstore.TargetStarted)
			return err
		}, "Connector config {name=x} contains no connector type"},
		{"missing required", func() error {
			_, err := h.CreateConnector(ctx, "x", cfg("name", "x", "connector.class", herdertest.SourceClass), connectstore.TargetStarted)
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nMissing required configuration \"topic\" which has no default value.\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"},
		{"tasks.max not a number", func() error {
			_, _, err := h.PutConfig(ctx, "keep", sourceConfig("keep", "tasks.max", "many"))
			return err
		}, "Connector configuration is invalid and contains the following 2 error(s):\nInvalid value many for configuration tasks.max: Not a number of type INT\nInvalid value null for configuration tasks.max: Value must be non-null\n"},
		{"wrong type", func() error {
			_, err := h.PatchConfig(ctx, "keep", cfg("batch.size", "1.5"))
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nInvalid value 1.5 for configuration batch.size: Not a number of type INT\n"},
		{"patch removes a required setting", func() error {
			_, err := h.PatchConfig(ctx, "keep", herder.Config{"topic": nil})
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nMissing required configuration \"topic\""},
		{"unknown converter", func() error {
			_, _, err := h.PutConfig(ctx, "keep", sourceConfig("keep", "value.converter", "com.example.AvroConverter"))
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nInvalid value com.example.AvroConverter for configuration value.converter: Class com.example.AvroConverter could not be found."},
		{"sink without topics", func() error {
			_, _, err := h.PutConfig(ctx, "sink", cfg("name", "sink", "connector.class", herdertest.SinkClass))
			return err
		}, "Connector configuration is invalid and contains the following 2 error(s):\nMust configure one of topics or topics.regex\nMust configure one of topics or topics.regex\n"},
		{"tasks.max zero", func() error {
			_, _, err := h.PutConfig(ctx, "keep", sourceConfig("keep", "tasks.max", "0"))
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nInvalid value 0 for configuration tasks.max: Value must be at least 1\n"},
		{"empty name", func() error {
			_, err := h.CreateConnector(ctx, "", sourceConfig(""), connectstore.TargetStarted)
			return err
		}, "Connector configuration is invalid and contains the following 1 error(s):\nInvalid value  for configuration name: String may not be empty\n"},
	} {
		err := c.do()
		if !errors.Is(err, herder.ErrBadRequest) || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if after := revision(t, s); after != before {
		t.Errorf("rejected requests wrote to the store: revision %d -> %d", before, after)
	}
	gotNulls, _ := h.Config(ctx, "keep")
	got := herder.Config(gotNulls).Strings()
	if want := sourceConfig("keep", "batch.size", "10").Strings(); !maps.Equal(got, want) {
		t.Errorf("config %v, want %v", got, want)
	}
}

func TestPutAndPatchConfig(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	info, created, err := h.PutConfig(ctx, "p", sourceConfig("p", "file", "/a"))
	if err != nil || !created || len(info.Tasks) != 0 {
		t.Fatalf("create by PUT: %+v %v %v", info, created, err)
	}
	if _, err := s.SetTasks(ctx, "p", []map[string]string{{"task": "0"}, {"task": "1"}}, nil); err != nil {
		t.Fatal(err)
	}
	info, created, err = h.PutConfig(ctx, "p", sourceConfig("p", "file", "/b"))
	if err != nil || created || info.Config["file"] != "/b" || len(info.Tasks) != 2 || info.Tasks[1] != (herder.TaskID{Connector: "p", Task: 1}) {
		t.Fatalf("update by PUT: %+v %v %v", info, created, err)
	}
	info, err = h.PatchConfig(ctx, "p", herder.Config{"file": nil, "batch.size": ptr("5")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Config["file"]; ok || info.Config["batch.size"] != "5" || info.Config["topic"] != "t" {
		t.Errorf("patched config %v", info.Config)
	}
	if _, err := h.PatchConfig(ctx, "nope", cfg("a", "b")); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Connector nope not found" {
		t.Errorf("patch of a missing connector: %v", err)
	}
	// A null value of the connector's own setting is dropped, as Kafka
	// Connect accepts it.
	c := sourceConfig("p")
	c["file"] = nil
	if info, _, err := h.PutConfig(ctx, "p", c); err != nil || len(info.Config) != 3 {
		t.Errorf("null own setting: %v %v", info.Config, err)
	}
}

func TestDeletePauseResumeStop(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		do     func(context.Context, string) error
		target string
	}{{h.Pause, connectstore.TargetPaused}, {h.Resume, connectstore.TargetStarted}, {h.Stop, connectstore.TargetStopped}, {h.Resume, connectstore.TargetStarted}} {
		if err := c.do(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Target(ctx, "c"); got != c.target {
			t.Errorf("target %s, want %s", got, c.target)
		}
		if err := c.do(ctx, "nope"); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Unknown connector nope" {
			t.Errorf("unknown connector: %v", err)
		}
	}
	// Stop drops the task configs.
	if _, err := s.SetTasks(ctx, "c", []map[string]string{{}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if tasks, _ := s.Tasks(ctx, "c"); len(tasks.Tasks) != 0 {
		t.Errorf("tasks after stop: %+v", tasks)
	}
	if err := h.DeleteConnector(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteConnector(ctx, "c"); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Connector c not found" {
		t.Errorf("second delete: %v", err)
	}
	if names, _ := h.Connectors(ctx); len(names) != 0 {
		t.Errorf("connectors %v", names)
	}
}

// Concurrent patches of one connector all land: each is a compare-and-set
// of the config it read, retried when another won.
func TestConcurrentPatchesLoseNothing(t *testing.T) {
	ctx := context.Background()
	h, _ := newHerderStore(t)
	if _, err := h.CreateConnector(ctx, "c", sourceConfig("c"), connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := h.PatchConfig(ctx, "c", cfg(fmt.Sprintf("extra.%d", i), "v"))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	gotNulls, _ := h.Config(ctx, "c")
	got := herder.Config(gotNulls).Strings()
	for i := range n {
		if got[fmt.Sprintf("extra.%d", i)] != "v" {
			t.Errorf("patch %d lost: %v", i, got)
		}
	}
}

// A null value of a connector's own setting is kept, shown as null in the
// config and in ConnectorInfo (written as JSON), kept by a PATCH that does
// not name it, and removed by one that does; connectors read the config
// without it. A null of one of Kafka Connect's settings is refused.
func TestNullValuesAreKept(t *testing.T) {
	ctx := context.Background()
	h, s := newHerderStore(t)
	props := sourceConfig("n")
	props["file"] = nil
	info, err := h.CreateConnector(ctx, "n", props, connectstore.TargetStopped)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(info); !strings.Contains(string(b), `"file":null`) {
		t.Errorf("created: %s", b)
	}
	got, _ := h.Config(ctx, "n")
	if v, ok := got["file"]; !ok || v != nil {
		t.Errorf("config %v: file is not null", got)
	}
	if cfg, _, _ := s.Config(ctx, "n"); cfg["file"] != "" || len(cfg) != 3 {
		t.Errorf("connectors see %v", cfg)
	}
	info, err = h.PatchConfig(ctx, "n", cfg("batch.size", "5"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(info); !strings.Contains(string(b), `"file":null`) || !strings.Contains(string(b), `"batch.size":"5"`) {
		t.Errorf("patched: %s", b)
	}
	if _, err := h.PatchConfig(ctx, "n", herder.Config{"file": nil}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Config(ctx, "n"); len(got) != 4 || got["file"] != nil {
		t.Errorf("after removing file: %v", got)
	} else if _, ok := got["file"]; ok {
		t.Errorf("a PATCH null kept file: %v", got)
	}
	vprops := sourceConfig("n")
	vprops["batch.size"] = nil
	infos, err := h.ValidateConfig(herdertest.SourceClass, vprops)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range infos.Configs {
		if c.Value.Name == "batch.size" && (c.Value.Value != nil || len(c.Value.Errors) > 0) {
			t.Errorf("validate shows batch.size null as %v %v, want null without errors", *c.Value.Value, c.Value.Errors)
		}
	}
	bad := sourceConfig("n")
	bad["header.converter"] = nil
	if _, _, err := h.PutConfig(ctx, "n", bad); !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), "Null value can not be supplied as the configuration value.") {
		t.Errorf("a null worker setting: %v", err)
	}
}
